// Package mfa is the auth service's MfaService: a signed-in user's second
// factors (TOTP, emailed codes), recovery codes, trusted browsers and
// security log, and the second step of a sign-in (VerifyMfa). The pure
// checks are in package codes, the SQL in the auth store; the session
// machinery it shares with sign-in comes from the auth service (Deps).
// docs/auth.md.
package mfa

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/services/auth/store"
)

// The spec's MFA rate limits (Limits → Rate limits), per user id.
var (
	// VerifyAttempts counts every code checked (verify, enrollment
	// confirms) and every call for new recovery codes, right or wrong.
	VerifyAttempts = ratelimit.Policy{Name: "mfa-verify", Limit: 5, Window: 15 * time.Minute}
	// EmailSends counts emailed codes, the one enabling the factor too.
	EmailSends = ratelimit.Policy{Name: "mfa-send-email", Limit: 3, Window: time.Hour}
)

// Lifetimes.
const (
	// EmailCodeTTL is how long an emailed code works.
	EmailCodeTTL = 10 * time.Minute
	// DeviceTTL is how long a trusted browser skips the second factor.
	DeviceTTL = 30 * 24 * time.Hour
)

// DeviceCookie is the trusted-device cookie's name; DeviceMetadataKey is
// the metadata key under which the gateway forwards its value on
// /api/auth routes.
const (
	DeviceCookie      = "almoner_device"
	DeviceMetadataKey = "almoner-device"
)

// The verify methods.
const (
	MethodTotp     = "totp"
	MethodEmail    = "email"
	MethodRecovery = "recovery"
)

// issuer names the account in authenticator apps.
const issuer = "Almoner"

// securityLogSize is how many rows ListSecurityLog returns.
const securityLogSize = 200

// Deps is what the MFA server takes from the auth service.
type Deps struct {
	Store   *store.Store
	Limiter *ratelimit.Limiter
	// Sealer seals TOTP secrets at rest.
	Sealer *secretbox.Sealer
	Now    func() time.Time
	// SecureCookies marks the device cookie Secure (an https public URL).
	SecureCookies bool
	// Caller returns the calling session's user and session; a session
	// waiting for its second factor is 401 unless allowPending.
	Caller func(ctx context.Context, allowPending bool) (user, session uuid.UUID, pending bool, err error)
	// NewSession is a session of user for a new token.
	NewSession func(ctx context.Context, user uuid.UUID, token string) store.NewSession
	// SignedIn sets the session cookie of token and returns the sign-in
	// body.
	SignedIn func(ctx context.Context, user uuid.UUID, token string) (*authv1.SignedIn, error)
	// Log is a security log row of the caller's request.
	Log func(ctx context.Context, user uuid.UUID, action string) store.LogEntry
	// AwaitCaches waits until no gateway answers from a validation cached
	// before a change.
	AwaitCaches func(ctx context.Context)
}

// Server implements MfaService.
type Server struct {
	authv1.UnimplementedMfaServiceServer
	d Deps
}

// New returns the MFA server.
func New(d Deps) *Server { return &Server{d: d} }

// Gate decides whether a sign-in of user with a right password needs the
// second factor: a user with a factor does, unless the request carries
// the cookie of one of their trusted browsers. It returns the security
// log action of the sign-in.
func Gate(ctx context.Context, st *store.Store, now time.Time, user uuid.UUID) (pending bool, action string, err error) {
	m, err := st.MfaState(ctx, user, now)
	if err != nil || !m.HasFactor() {
		return false, store.ActionSignIn, err
	}
	// An operator passes the factor at every sign-in (docs/operators.md).
	if token := deviceToken(ctx); token != "" && !m.Operator {
		ok, err := st.UseTrustedDevice(ctx, user, hashToken(token), now)
		if err != nil || ok {
			return false, store.ActionSignInTrustedDevice, err
		}
	}
	return true, store.ActionSignInMfaPending, nil
}

// Methods are the verify methods open to a user in state m.
func Methods(m store.MfaState) []string {
	out := []string{}
	if m.TotpEnabled {
		out = append(out, MethodTotp)
	}
	if m.EmailEnabled {
		out = append(out, MethodEmail)
	}
	if m.HasFactor() && m.RecoveryLeft > 0 {
		out = append(out, MethodRecovery)
	}
	return out
}

func deviceToken(ctx context.Context) string {
	if v := metadata.ValueFromIncomingContext(ctx, DeviceMetadataKey); len(v) > 0 {
		return v[0]
	}
	return ""
}

// deviceCookie is the Set-Cookie value of a trusted-device token: only
// /api/auth needs it.
func (s *Server) deviceCookie(token string) string {
	c := &http.Cookie{Name: DeviceCookie, Value: token, Path: "/api/auth", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.d.SecureCookies, MaxAge: int(DeviceTTL / time.Second)}
	return c.String()
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
