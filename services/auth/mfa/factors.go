package mfa

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/services/auth/mfa/codes"
	"github.com/almoner/almoner/services/auth/store"
)

// GetMfa returns the user's factors.
func (s *Server) GetMfa(ctx context.Context, _ *authv1.GetMfaRequest) (*authv1.GetMfaResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	m, err := s.d.Store.MfaState(ctx, user, s.d.Now())
	if err != nil {
		return nil, err
	}
	return &authv1.GetMfaResponse{Totp: &authv1.MfaFactor{Enabled: m.TotpEnabled}, Email: &authv1.MfaFactor{Enabled: m.EmailEnabled},
		RecoveryCodesLeft: int32(m.RecoveryLeft), TrustedDevices: int32(m.TrustedDevices)}, nil
}

// secretAD binds a sealed TOTP secret to its user: a box copied to
// another user's row does not open.
func secretAD(user uuid.UUID) []byte { return []byte("totp-secret:" + user.String()) }

// EnrollTotp keeps a new sealed secret until a code confirms it.
func (s *Server) EnrollTotp(ctx context.Context, _ *authv1.EnrollTotpRequest) (*authv1.EnrollTotpResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	u, err := s.d.Store.UserByID(ctx, user)
	if err != nil {
		return nil, err
	}
	secret, url, err := codes.NewSecret(issuer, u.Email)
	if err != nil {
		return nil, err
	}
	sealed := s.d.Sealer.Seal([]byte(secret), secretAD(user))
	if err := s.d.Store.StartTotp(ctx, user, sealed, s.d.Log(ctx, user, store.ActionTotpEnrollStarted)); err != nil {
		return nil, mapErr(err, "TOTP")
	}
	return &authv1.EnrollTotpResponse{Secret: secret, OtpauthUrl: url}, nil
}

// ConfirmTotp turns TOTP on with a code of the enrolled secret; its step
// becomes the last one used, so the same code cannot then sign in.
func (s *Server) ConfirmTotp(ctx context.Context, req *authv1.ConfirmTotpRequest) (*authv1.ConfirmTotpResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	if err := s.attempt(ctx, user); err != nil {
		return nil, err
	}
	check := func(_ pgx.Tx, m store.MfaState) (int64, error) {
		return s.totpStep(user, m, req.GetCode())
	}
	rc, err := s.enable(ctx, user, store.ActionTotpEnabled, check, s.d.Store.EnableTotp)
	if err != nil {
		return nil, mapErr(err, "TOTP")
	}
	return &authv1.ConfirmTotpResponse{RecoveryCodes: rc}, nil
}

// totpStep opens the user's secret and checks code against it.
func (s *Server) totpStep(user uuid.UUID, m store.MfaState, code string) (int64, error) {
	if m.TotpSecret == nil {
		return 0, store.ErrNoEnrollment
	}
	secret, err := s.d.Sealer.Open(m.TotpSecret, secretAD(user))
	if err != nil {
		return 0, fmt.Errorf("mfa: open totp secret: %w", err)
	}
	step, err := codes.Step(string(secret), code, s.d.Now(), m.TotpLastStep)
	if err != nil {
		// A wrong code and a used one are the same answer.
		return 0, store.ErrCodeInvalid
	}
	return step, nil
}

// enable turns a factor on through on, with fresh recovery codes that it
// returns when this was the user's first factor (else none).
func (s *Server) enable(ctx context.Context, user uuid.UUID, action string, check func(pgx.Tx, store.MfaState) (int64, error),
	on func(context.Context, store.Enabling) (bool, error),
) ([]string, error) {
	rc := codes.NewRecoveryCodes()
	hashes := make([][]byte, len(rc))
	for i, c := range rc {
		hashes[i] = codes.HashRecovery(c)
	}
	first, err := on(ctx, store.Enabling{UserID: user, Check: check, Recovery: hashes, Log: s.d.Log(ctx, user, action)})
	if err != nil {
		return nil, err
	}
	s.d.AwaitCaches(ctx)
	if !first {
		return []string{}, nil
	}
	return rc, nil
}

// DeleteTotp turns TOTP off with the password.
func (s *Server) DeleteTotp(ctx context.Context, req *authv1.DeleteTotpRequest) (*authv1.DeleteTotpResponse, error) {
	if err := s.disable(ctx, req.GetPassword(), store.FactorTotp, store.ActionTotpDisabled); err != nil {
		return nil, err
	}
	return &authv1.DeleteTotpResponse{}, nil
}

// DeleteMfaEmail turns email codes off with the password.
func (s *Server) DeleteMfaEmail(ctx context.Context, req *authv1.DeleteMfaEmailRequest) (*authv1.DeleteMfaEmailResponse, error) {
	if err := s.disable(ctx, req.GetPassword(), store.FactorEmail, store.ActionEmailDisabled); err != nil {
		return nil, err
	}
	return &authv1.DeleteMfaEmailResponse{}, nil
}

func (s *Server) disable(ctx context.Context, pw, factor, action string) error {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return err
	}
	if err := s.checkPassword(ctx, user, pw); err != nil {
		return err
	}
	if err := s.d.Store.DisableFactor(ctx, user, factor, s.d.Log(ctx, user, action)); err != nil {
		return err
	}
	s.d.AwaitCaches(ctx)
	return nil
}

// EnableMfaEmail mails a code that ConfirmMfaEmail turns the factor on
// with.
func (s *Server) EnableMfaEmail(ctx context.Context, _ *authv1.EnableMfaEmailRequest) (*authv1.EnableMfaEmailResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	m, err := s.d.Store.MfaState(ctx, user, s.d.Now())
	if err != nil {
		return nil, err
	}
	if m.EmailEnabled {
		return nil, mapErr(store.ErrFactorOn, "Email codes")
	}
	if err := s.mailCode(ctx, user, store.ActionEmailEnrollStarted); err != nil {
		return nil, err
	}
	return &authv1.EnableMfaEmailResponse{}, nil
}

// ConfirmMfaEmail turns email codes on with the code mailed.
func (s *Server) ConfirmMfaEmail(ctx context.Context, req *authv1.ConfirmMfaEmailRequest) (*authv1.ConfirmMfaEmailResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	if err := s.attempt(ctx, user); err != nil {
		return nil, err
	}
	hash, at := codes.HashEmailCode(user.String(), req.GetCode()), s.d.Now()
	check := func(tx pgx.Tx, _ store.MfaState) (int64, error) {
		return 0, store.UseEmailCodeIn(ctx, tx, user, hash, at)
	}
	rc, err := s.enable(ctx, user, store.ActionEmailEnabled, check, s.d.Store.EnableEmail)
	if err != nil {
		return nil, mapErr(err, "Email codes")
	}
	return &authv1.ConfirmMfaEmailResponse{RecoveryCodes: rc}, nil
}

// SendMfaEmailCode mails a sign-in code to a user with email codes on.
func (s *Server) SendMfaEmailCode(ctx context.Context, _ *authv1.SendMfaEmailCodeRequest) (*authv1.SendMfaEmailCodeResponse, error) {
	user, _, _, err := s.d.Caller(ctx, true)
	if err != nil {
		return nil, err
	}
	m, err := s.d.Store.MfaState(ctx, user, s.d.Now())
	if err != nil {
		return nil, err
	}
	if !m.EmailEnabled {
		return nil, apperr.Rule(codeNoEnrollment, "Email codes are off for this user.")
	}
	if err := s.mailCode(ctx, user, store.ActionEmailCodeSent); err != nil {
		return nil, err
	}
	return &authv1.SendMfaEmailCodeResponse{}, nil
}

// mailCode counts a send (429 beyond the limit), then queues a new code's
// email; the queue sends it after the request.
func (s *Server) mailCode(ctx context.Context, user uuid.UUID, action string) error {
	if err := s.send(ctx, user); err != nil {
		return err
	}
	u, err := s.d.Store.UserByID(ctx, user)
	if err != nil {
		return err
	}
	code := codes.NewEmailCode()
	msg := mail.Message{Kind: "mfa-code", To: u.Email, Subject: "Your Almoner sign-in code",
		Text: fmt.Sprintf("Your Almoner code is %s\n\nIt works once, for %d minutes. If you did not just sign in, "+
			"change your password: someone knows it.\n", code, int(EmailCodeTTL.Minutes()))}
	return s.d.Store.CreateEmailCode(ctx, user, codes.HashEmailCode(user.String(), code), s.d.Now().Add(EmailCodeTTL), msg,
		s.d.Log(ctx, user, action))
}

// RegenerateRecoveryCodes replaces the recovery codes, with the password.
func (s *Server) RegenerateRecoveryCodes(ctx context.Context, req *authv1.RegenerateRecoveryCodesRequest) (*authv1.RegenerateRecoveryCodesResponse, error) {
	user, _, _, err := s.d.Caller(ctx, false)
	if err != nil {
		return nil, err
	}
	// The recovery-code endpoint is one of mfa-verify's.
	if err := s.attempt(ctx, user); err != nil {
		return nil, err
	}
	if err := s.checkPassword(ctx, user, req.GetPassword()); err != nil {
		return nil, err
	}
	rc := codes.NewRecoveryCodes()
	hashes := make([][]byte, len(rc))
	for i, c := range rc {
		hashes[i] = codes.HashRecovery(c)
	}
	if err := s.d.Store.ReplaceRecoveryCodes(ctx, user, hashes, s.d.Log(ctx, user, store.ActionRecoveryCodesIssued)); err != nil {
		return nil, mapErr(err, "a second factor")
	}
	return &authv1.RegenerateRecoveryCodesResponse{RecoveryCodes: rc}, nil
}
