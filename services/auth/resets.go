package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/services/auth/password"
	"github.com/almoner/almoner/services/auth/store"
)

// resetTTL is how long a password reset link works.
const resetTTL = time.Hour

// resetMails bounds the reset emails one address receives, so the public
// endpoint cannot flood an inbox: beyond it the answer is still 202 and
// nothing is sent.
var resetMails = ratelimit.Policy{Name: "password-reset-mail", Limit: 5, Window: time.Hour}

// RequestPasswordReset mails a reset link to a user with a password. The
// answer never says whether the email is a user's.
func (a *staffServer) RequestPasswordReset(ctx context.Context, req *authv1.RequestPasswordResetRequest) (*authv1.RequestPasswordResetResponse, error) {
	s := a.s
	u, _, err := s.store.UserByEmail(ctx, req.GetEmail())
	if errors.Is(err, db.ErrNotFound) || (err == nil && u.PasswordHash == nil) {
		return &authv1.RequestPasswordResetResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if ok, err := s.limiter.Allow(ctx, resetMails, u.ID.String()); err != nil || !ok {
		return &authv1.RequestPasswordResetResponse{}, err
	}
	token := newToken()
	link := mail.Link(s.cfg.Mail.PublicURL, "/reset-password", token)
	msg := mail.Message{Kind: "password-reset", To: u.Email, Subject: "Reset your Almoner password",
		Text: fmt.Sprintf("Someone asked to reset the password of your Almoner account.\n\nChoose a new password within an hour:\n%s\n\n"+
			"If it was not you, ignore this email: your password stays as it is.\n", link)}
	if err := s.store.CreateReset(ctx, u.ID, hashToken(token), s.now().Add(resetTTL), msg); err != nil {
		return nil, err
	}
	return &authv1.RequestPasswordResetResponse{}, nil
}

// ConfirmPasswordReset sets the new password and ends every session.
func (a *staffServer) ConfirmPasswordReset(ctx context.Context, req *authv1.ConfirmPasswordResetRequest) (*authv1.ConfirmPasswordResetResponse, error) {
	s := a.s
	th := hashToken(req.GetToken())
	u, err := s.store.ResetUser(ctx, th)
	if errors.Is(err, store.ErrResetInvalid) {
		return nil, errResetInvalid()
	}
	if err != nil {
		return nil, err
	}
	if msg := password.Problem(req.GetPassword(), u.Email); msg != "" {
		var v apperr.Violations
		v.Add("Password", "%s", msg)
		return nil, v.Err()
	}
	err = s.store.ConfirmReset(ctx, th, password.Hash(req.GetPassword(), s.cfg.Password), s.logEntry(ctx, u.ID, store.ActionPasswordReset))
	if errors.Is(err, store.ErrResetInvalid) {
		return nil, errResetInvalid()
	}
	if err != nil {
		return nil, err
	}
	// Every session ended: no gateway may answer from one any more.
	s.awaitCaches(ctx)
	return &authv1.ConfirmPasswordResetResponse{}, nil
}

func errResetInvalid() error {
	var v apperr.Violations
	v.Add("Token", "The reset link is unknown, used or expired.")
	return v.Err()
}
