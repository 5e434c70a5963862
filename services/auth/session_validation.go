package auth

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/auth/impersonation"
	"github.com/almoner/almoner/services/auth/store"
)

// touchEvery is how stale a session's last use may be before a request
// writes it again: the idle timeout is hours, so a write per minute at
// most keeps it exact enough without a write per request. Gateways keep a
// session's validation at most this long (sessionEntryLife there), so an
// active session is validated, and touched, at least every two minutes.
const touchEvery = time.Minute

// ValidateSession resolves a session cookie for the gateway: a session
// that is open, within its idle timeout and its absolute lifetime; for a
// tenant route, the user's active membership there (NOT_FOUND without
// one) gives the role's scopes.
func (v *validationServer) ValidateSession(ctx context.Context, req *authv1.ValidateSessionRequest) (*authv1.ValidateSessionResponse, error) {
	s := v.s
	sess, err := s.openSession(ctx, req.GetToken())
	if err != nil {
		return nil, err
	}
	resp := &authv1.ValidateSessionResponse{UserId: sess.UserID.String(), SessionId: sess.ID.String(), ExpiresAt: timestamppb.New(sess.ExpiresAt)}
	if req.GetAdmin() {
		return s.operatorAccess(ctx, resp, sess)
	}
	if req.GetTenantId() == "" {
		// The auth routes check a pending session themselves (caller):
		// it may still verify, send a code and sign out.
		return resp, nil
	}
	if sess.MfaPending {
		return nil, apperr.Unauthenticated()
	}
	if sess.Operator {
		return s.impersonated(ctx, resp, req.GetTenantId(), sess)
	}
	return s.tenantAccess(ctx, resp, req.GetTenantId(), sess.UserID)
}

// impersonated completes resp for an operator's session on a tenant
// route: the user it impersonates there, with that user's role, or 401
// without an impersonation that holds (docs/operators.md). Another
// tenant's route is the 404 of a tenant without membership.
func (s *Service) impersonated(ctx context.Context, resp *authv1.ValidateSessionResponse, tenantID string, sess store.Session) (*authv1.ValidateSessionResponse, error) {
	a, err := impersonation.Resolve(ctx, s.impersonationDeps(), sess.ID)
	if err != nil {
		return nil, err
	}
	if tenant, err := uuid.Parse(tenantID); err != nil || tenant != a.Impersonation.TenantID {
		return nil, errTenantNotFound
	}
	resp.UserId, resp.ImpersonationId, resp.ImpersonatorId = a.Impersonation.UserID.String(), a.Impersonation.ID.String(), sess.UserID.String()
	resp.ExpiresAt = timestamppb.New(impersonation.Until(a, sess.ExpiresAt))
	fillAccess(resp, a.Impersonation.TenantID, a.Access)
	return resp, nil
}

// tenantAccess completes resp with the user's role and its scopes in the
// tenant: NOT_FOUND without an active membership, 403 codeMfaEnrollment
// for a user without a second factor in a tenant with FeatureMfaRequired.
func (s *Service) tenantAccess(ctx context.Context, resp *authv1.ValidateSessionResponse, tenantID string, user uuid.UUID) (*authv1.ValidateSessionResponse, error) {
	tenant, err := uuid.Parse(tenantID)
	if err != nil {
		return nil, errTenantNotFound
	}
	access, err := s.store.Access(ctx, tenant, user)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	if !access.HasFactor && slices.Contains(access.Features, FeatureMfaRequired) {
		return nil, errMfaEnrollment()
	}
	fillAccess(resp, tenant, access)
	return resp, nil
}

// fillAccess sets the tenant, the role and its scopes, and the tenant's
// features and currency.
func fillAccess(resp *authv1.ValidateSessionResponse, tenant uuid.UUID, access store.TenantAccess) {
	// A custom role's scopes are the tenant's; a role the code no longer
	// knows grants nothing.
	sc, builtIn := RoleScopes(access.Role)
	if !builtIn {
		sc = access.CustomScopes
	}
	resp.TenantId, resp.Role, resp.Scopes = tenant.String(), access.Role, sc
	resp.Features, resp.DefaultCurrency = access.Features, access.Currency
}

// openSession returns the usable session of token and notes its use;
// every failure is the same Unauthenticated.
func (s *Service) openSession(ctx context.Context, token string) (store.Session, error) {
	if token == "" {
		return store.Session{}, apperr.Unauthenticated()
	}
	sess, err := s.store.SessionByToken(ctx, hashToken(token))
	if errors.Is(err, db.ErrNotFound) {
		return store.Session{}, apperr.Unauthenticated()
	}
	if err != nil {
		return store.Session{}, err
	}
	now := s.now()
	if !now.Before(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) >= s.cfg.SessionIdle {
		return store.Session{}, apperr.Unauthenticated()
	}
	if now.Sub(sess.LastSeenAt) >= touchEvery {
		if err := s.store.TouchSession(ctx, sess.ID); err != nil {
			return store.Session{}, err
		}
	}
	return sess, nil
}

// operatorAccess completes resp for an /api/admin route: a passed session
// (401 while the factor is pending), of an operator (403 otherwise) who
// has a second factor on (403 codeMfaEnrollment before they enroll).
func (s *Service) operatorAccess(ctx context.Context, resp *authv1.ValidateSessionResponse, sess store.Session) (*authv1.ValidateSessionResponse, error) {
	if sess.MfaPending {
		return nil, apperr.Unauthenticated()
	}
	op, err := s.store.Operator(ctx, sess.UserID)
	if err != nil {
		return nil, err
	}
	if op.Role == "" {
		return nil, apperr.Forbidden("Missing required role: support")
	}
	if !op.HasFactor {
		return nil, apperr.ForbiddenCode(codeMfaEnrollment, "An operator must turn on a second factor (POST /api/auth/mfa/totp) before anything else.")
	}
	resp.PlatformRole = op.Role
	return resp, nil
}
