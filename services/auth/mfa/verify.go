package mfa

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/auth/mfa/codes"
	"github.com/almoner/almoner/services/auth/store"
)

// VerifyMfa passes a pending session's second factor: every call counts
// (mfa-verify), the code is checked and spent, and the session is
// replaced by a new one (no fixation), trusting the browser on request.
func (s *Server) VerifyMfa(ctx context.Context, req *authv1.VerifyMfaRequest) (*authv1.VerifyMfaResponse, error) {
	user, session, pending, err := s.d.Caller(ctx, true)
	if err != nil {
		return nil, err
	}
	if !pending {
		return nil, mapErr(store.ErrNotPending, "")
	}
	if err := s.attempt(ctx, user); err != nil {
		return nil, err
	}
	action, err := s.checkCode(ctx, user, req.GetMethod(), req.GetCode())
	if err != nil {
		return nil, err
	}
	token := newToken()
	c := store.Completion{Pending: session, Session: s.d.NewSession(ctx, user, token)}
	c.Session.LogAction = action
	var device string
	if req.GetRememberDevice() && !s.operator(ctx, user) {
		device = newToken()
		c.Device = &store.NewDevice{TokenHash: hashToken(device), UserAgent: c.Session.UserAgent, ExpiresAt: s.d.Now().Add(DeviceTTL)}
	}
	if err := s.d.Store.CompleteMfa(ctx, c); err != nil {
		return nil, mapErr(err, "")
	}
	if device != "" {
		if err := grpc.SetHeader(ctx, metadata.Pairs("set-cookie", s.deviceCookie(device))); err != nil {
			return nil, err
		}
	}
	body, err := s.d.SignedIn(ctx, user, token)
	if err != nil {
		return nil, err
	}
	return &authv1.VerifyMfaResponse{Session: body}, nil
}

// operator reports whether user is a platform operator, whose browsers are
// never trusted: an operator passes the factor at every sign-in. A failed
// read counts as an operator, so it never trusts a device.
func (s *Server) operator(ctx context.Context, user uuid.UUID) bool {
	u, err := s.d.Store.UserByID(ctx, user)
	return err != nil || u.PlatformRole != ""
}

// checkCode checks and spends a code of method; it returns the security
// log action of the sign-in. A wrong, used or expired code, and a method
// the user has not turned on, are 400 under Code (Method for an unknown
// method).
func (s *Server) checkCode(ctx context.Context, user uuid.UUID, method, code string) (string, error) {
	m, err := s.d.Store.MfaState(ctx, user, s.d.Now())
	if err != nil {
		return "", err
	}
	switch method {
	case MethodTotp:
		if !m.TotpEnabled {
			return "", errWrongCode()
		}
		step, err := s.totpStep(user, m, code)
		if err == nil {
			// Two requests with one code: only one moves the step.
			err = s.d.Store.UseTotpStep(ctx, user, step)
		}
		return store.ActionSignInMfa, spent(err)
	case MethodEmail:
		if !m.EmailEnabled || !codes.WellFormed(code) {
			return "", errWrongCode()
		}
		return store.ActionSignInMfa, spent(s.d.Store.UseEmailCode(ctx, user, codes.HashEmailCode(user.String(), code), s.d.Now()))
	case MethodRecovery:
		if !m.HasFactor() {
			return "", errWrongCode()
		}
		return store.ActionRecoveryCodeUsed, spent(s.d.Store.UseRecoveryCode(ctx, user, codes.HashRecovery(code)))
	}
	var v apperr.Violations
	v.Add("Method", "Method must be one of totp, email, recovery.")
	return "", v.Err()
}

// spent maps a failed check of a code to its 400.
func spent(err error) error {
	if errors.Is(err, store.ErrCodeInvalid) {
		return errWrongCode()
	}
	return err
}
