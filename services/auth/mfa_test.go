package auth

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/services/auth/keyformat"
	"github.com/almoner/almoner/services/auth/mfa"
	"github.com/almoner/almoner/services/auth/mfa/codes"
)

// signedInContext accepts an invitation for email and returns the context
// of a call from that user's session, as the gateway would assert it.
func signedInContext(t *testing.T, f *fixture, tenant, email string) context.Context {
	t.Helper()
	acceptInvite(t, f, tenant, email)
	var user, session uuid.UUID
	err := f.pool.QueryRow(context.Background(), `SELECT s.user_id, s.id FROM auth.sessions s JOIN auth.users u ON u.id = s.user_id
		WHERE u.email = $1`, email).Scan(&user, &session)
	if err != nil {
		t.Fatal(err)
	}
	ctx := authctx.NewIncomingContext(context.Background(), authctx.Principal{UserID: user.String(), SessionID: session.String()})
	return grpc.NewContextWithServerTransportStream(ctx, &headerStream{})
}

// TestMfaRateWindows: each MFA policy allows its limit in a window, then
// refuses with the rate-limit error, and allows again in the next window;
// the clock is the service's, moved by the test.
func TestMfaRateWindows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	tid := f.tenant(t, "mfa-limits")
	srv := mfa.New(f.s.mfaDeps())
	// The middle of a window of both policies (15 minutes divides an hour).
	start := time.Now().Truncate(time.Hour).Add(24*time.Hour + 7*time.Minute)
	for _, tc := range []struct {
		name   string
		policy string
		limit  int
		window time.Duration
		call   func(ctx context.Context) error
	}{
		{"mfa-verify: enrollment confirms, right or wrong", mfa.VerifyAttempts.Name, 5, 15 * time.Minute, func(ctx context.Context) error {
			_, err := srv.ConfirmTotp(ctx, &authv1.ConfirmTotpRequest{Code: "not a code"})
			return err
		}},
		{"mfa-send-email: the enabling code counts", mfa.EmailSends.Name, 3, time.Hour, func(ctx context.Context) error {
			_, err := srv.EnableMfaEmail(ctx, &authv1.EnableMfaEmailRequest{})
			return err
		}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			ctx := signedInContext(t, f, tid, tc.policy+"@example.org")
			if _, err := srv.EnrollTotp(ctx, &authv1.EnrollTotpRequest{}); err != nil {
				t.Fatal(err)
			}
			f.s.now = func() time.Time { return start }
			for i := range tc.limit {
				if err := tc.call(ctx); apperr.IsKind(err, apperr.KindRateLimited) {
					t.Fatalf("%s: call %d refused within the limit", tc.name, i+1)
				}
			}
			wantKind(t, tc.name+": over the limit", tc.call(ctx), apperr.KindRateLimited)
			f.s.now = func() time.Time { return start.Add(tc.window) }
			if err := tc.call(ctx); apperr.IsKind(err, apperr.KindRateLimited) {
				t.Errorf("%s: refused in the next window: %v", tc.name, err)
			}
		})
	}
}

var codeInOutbox = regexp.MustCompile(`code is (\d{6})`)

// TestMfaEmailCodeLifetime: an emailed code works for 10 minutes.
func TestMfaEmailCodeLifetime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	tid := f.tenant(t, "mfa-email")
	srv := mfa.New(f.s.mfaDeps())
	ctx := signedInContext(t, f, tid, "codes@example.org")
	start := time.Now()
	mailed := func() string {
		t.Helper()
		if _, err := srv.EnableMfaEmail(ctx, &authv1.EnableMfaEmailRequest{}); err != nil {
			t.Fatal(err)
		}
		var text string
		if err := f.pool.QueryRow(ctx, `SELECT text_body FROM mail.outbox WHERE kind = 'mfa-code' ORDER BY id DESC LIMIT 1`).Scan(&text); err != nil {
			t.Fatal(err)
		}
		return codeInOutbox.FindStringSubmatch(text)[1]
	}
	confirm := func(code string, after time.Duration) error {
		f.s.now = func() time.Time { return start.Add(after) }
		_, err := srv.ConfirmMfaEmail(ctx, &authv1.ConfirmMfaEmailRequest{Code: code})
		return err
	}
	f.s.now = func() time.Time { return start }
	late := mailed()
	if e := kindOf(t, "10 minutes and a second later", confirm(late, 10*time.Minute+time.Second), apperr.KindInvalid); e.Violations[0].Field != "Code" {
		t.Errorf("expired code: %+v", e.Violations)
	}
	f.s.now = func() time.Time { return start }
	code := mailed()
	if err := confirm(code, 9*time.Minute); err != nil {
		t.Fatalf("a code 9 minutes old: %v", err)
	}
}

// TestPendingSession: a session that passed only the password reaches no
// tenant route (401) and ends 15 minutes after sign-in if never verified.
func TestPendingSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	tid := f.tenant(t, "mfa-pending")
	srv := mfa.New(f.s.mfaDeps())
	ctx := signedInContext(t, f, tid, "pending@example.org")
	enrolled, err := srv.EnrollTotp(ctx, &authv1.EnrollTotpRequest{})
	if err != nil {
		t.Fatal(err)
	}
	code, _ := codes.Code(enrolled.GetSecret(), time.Now())
	if _, err := srv.ConfirmTotp(ctx, &authv1.ConfirmTotpRequest{Code: code}); err != nil {
		t.Fatal(err)
	}
	hs := &headerStream{}
	signedIn, err := (&staffServer{s: f.s}).SignIn(grpc.NewContextWithServerTransportStream(context.Background(), hs),
		&authv1.SignInRequest{Email: "pending@example.org", Password: "seven lanterns drift"})
	if err != nil || !signedIn.GetSession().GetMfaRequired() {
		t.Fatalf("sign-in %v, %v", signedIn, err)
	}
	c, err := http.ParseSetCookie(hs.md.Get("set-cookie")[0])
	if err != nil {
		t.Fatal(err)
	}
	v := &validationServer{s: f.s}
	_, err = v.ValidateSession(ctx, &authv1.ValidateSessionRequest{Token: c.Value, TenantId: tid})
	wantKind(t, "a pending session on a tenant route", err, apperr.KindUnauthenticated)
	start := time.Now()
	for _, tc := range []struct {
		after time.Duration
		open  bool
	}{{14 * time.Minute, true}, {15*time.Minute + time.Second, false}} {
		f.s.now = func() time.Time { return start.Add(tc.after) }
		if _, err := v.ValidateSession(ctx, &authv1.ValidateSessionRequest{Token: c.Value}); (err == nil) != tc.open {
			t.Errorf("after %v: %v, want open %v", tc.after, err, tc.open)
		}
	}
}

var resetToken = regexp.MustCompile(`token=([A-Za-z0-9_-]+)`)

// TestResetForgetsDevices: a password reset forgets every trusted browser
// and writes password.reset to the security log.
func TestResetForgetsDevices(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	tid := f.tenant(t, "mfa-reset")
	ctx := signedInContext(t, f, tid, "reset@example.org")
	p, _ := authctx.FromSession(ctx)
	if _, err := f.pool.Exec(ctx, `INSERT INTO auth.trusted_devices (id, user_id, token_hash, expires_at)
		VALUES ($1, $2, 'x', now() + interval '1 day')`, uuid.New(), p.UserID); err != nil {
		t.Fatal(err)
	}
	staff := &staffServer{s: f.s}
	if _, err := staff.RequestPasswordReset(ctx, &authv1.RequestPasswordResetRequest{Email: "reset@example.org"}); err != nil {
		t.Fatal(err)
	}
	var text string
	if err := f.pool.QueryRow(ctx, `SELECT text_body FROM mail.outbox WHERE kind = 'password-reset'`).Scan(&text); err != nil {
		t.Fatal(err)
	}
	if _, err := staff.ConfirmPasswordReset(ctx, &authv1.ConfirmPasswordResetRequest{Token: resetToken.FindStringSubmatch(text)[1],
		Password: "eleven quiet harbors"}); err != nil {
		t.Fatal(err)
	}
	var devices, logged int
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM auth.trusted_devices),
		(SELECT count(*) FROM auth.security_log WHERE action = 'password.reset')`).Scan(&devices, &logged); err != nil {
		t.Fatal(err)
	}
	if devices != 0 || logged != 1 {
		t.Errorf("after a reset: %d trusted devices, %d password.reset rows; want 0 and 1", devices, logged)
	}
}
