package auth

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/services/auth/mfa"
	"github.com/almoner/almoner/services/auth/store"
)

// FeatureMfaRequired is the tenant feature that keeps members without a
// second factor out of the tenant's routes (403 codeMfaEnrollment).
const FeatureMfaRequired = features.MfaRequired

// codeMfaEnrollment is the typed code of that 403.
const codeMfaEnrollment = "Mfa.EnrollmentRequired"

func errMfaEnrollment() error {
	return apperr.ForbiddenCode(codeMfaEnrollment, "This organization requires a second factor: turn one on under /api/auth/mfa.")
}

// pendingLifetime bounds a session waiting for its second factor: the
// person is at the prompt now, and a half-signed-in session should not
// linger for the full lifetime (GitHub's two-factor prompt expires too).
const pendingLifetime = 15 * time.Minute

// gated is ns as mfa.Gate decided: waiting for the second factor (with
// the short lifetime) or not, and the sign-in's security log action.
func (s *Service) gated(ns store.NewSession, pending bool, action string) store.NewSession {
	ns.MfaPending, ns.LogAction = pending, action
	if pending {
		ns.ExpiresAt = s.now().Add(pendingLifetime)
	}
	return ns
}

// mfaDeps is what the MFA server takes from the service.
func (s *Service) mfaDeps() mfa.Deps {
	return mfa.Deps{
		// Now reads s.now at each call, so a test may move the clock.
		Store: s.store, Limiter: s.limiter, Sealer: s.cfg.Sealer, Now: func() time.Time { return s.now() }, SecureCookies: s.secureCookies(),
		Caller:     s.caller,
		NewSession: s.newSession,
		SignedIn: func(ctx context.Context, user uuid.UUID, token string) (*authv1.SignedIn, error) {
			return s.signedIn(ctx, user, token, false)
		},
		Log:         s.logEntry,
		AwaitCaches: s.awaitCaches,
	}
}

// caller is the calling session's user and session. A session still
// waiting for its second factor is 401 unless allowPending: it may only
// verify, have a code sent and sign out.
func (s *Service) caller(ctx context.Context, allowPending bool) (user, session uuid.UUID, pending bool, err error) {
	_, user, session, err = sessionPrincipal(ctx)
	if err != nil {
		return uuid.Nil, uuid.Nil, false, err
	}
	sess, err := s.store.SessionByID(ctx, user, session)
	if errors.Is(err, db.ErrNotFound) {
		return uuid.Nil, uuid.Nil, false, apperr.Unauthenticated()
	}
	if err != nil {
		return uuid.Nil, uuid.Nil, false, err
	}
	if sess.MfaPending && !allowPending {
		return uuid.Nil, uuid.Nil, false, apperr.Unauthenticated()
	}
	return user, session, sess.MfaPending, nil
}

// logEntry is a security log row of the request: the client's address
// (forwarded by the gateway) and User-Agent.
func (s *Service) logEntry(ctx context.Context, user uuid.UUID, action string) store.LogEntry {
	e := store.LogEntry{UserID: user, Action: action, UserAgent: clientUserAgent(ctx)}
	if ip, ok := ratelimit.FromIncoming(ctx); ok {
		e.IPAddress = ip.String()
	}
	return e
}

// clientUserAgent is the browser's User-Agent, cut to 512 bytes.
func clientUserAgent(ctx context.Context) string {
	v := metadata.ValueFromIncomingContext(ctx, "client-user-agent")
	if len(v) == 0 {
		return ""
	}
	ua := v[0]
	if len(ua) > 512 {
		ua = ua[:512]
	}
	return ua
}
