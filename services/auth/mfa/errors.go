package mfa

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/auth/password"
	"github.com/almoner/almoner/services/auth/store"
)

// Typed codes of the MFA refusals.
const (
	codeAlreadyOn    = "Mfa.AlreadyEnabled"
	codeNoEnrollment = "Mfa.NotEnrolled"
	codeNotRequired  = "Mfa.NotRequired"
)

// mapErr turns the store's refusals into the answers; anything else goes
// on as it is.
func mapErr(err error, factor string) error {
	switch {
	case errors.Is(err, store.ErrCodeInvalid):
		return errWrongCode()
	case errors.Is(err, store.ErrFactorOn):
		return apperr.Rule(codeAlreadyOn, factor+" is on already; turn it off first.")
	case errors.Is(err, store.ErrNoEnrollment):
		return apperr.Rule(codeNoEnrollment, "Start the enrollment of "+factor+" first.")
	case errors.Is(err, store.ErrNotPending):
		return apperr.Rule(codeNotRequired, "This session needs no second factor.")
	}
	return err
}

func errWrongCode() error {
	var v apperr.Violations
	v.Add("Code", "The code is wrong, used or expired.")
	return v.Err()
}

// attempt counts one MFA attempt of the user (mfa-verify): 429 beyond the
// limit.
func (s *Server) attempt(ctx context.Context, user uuid.UUID) error {
	ok, err := s.d.Limiter.AllowAt(ctx, VerifyAttempts, user.String(), s.d.Now())
	if err != nil {
		return err
	}
	if !ok {
		return apperr.RateLimited()
	}
	return nil
}

// send counts one emailed code of the user (mfa-send-email).
func (s *Server) send(ctx context.Context, user uuid.UUID) error {
	ok, err := s.d.Limiter.AllowAt(ctx, EmailSends, user.String(), s.d.Now())
	if err != nil {
		return err
	}
	if !ok {
		return apperr.RateLimited()
	}
	return nil
}

// checkPassword proves the user's password again (a factor turned off,
// new recovery codes): 400 under Password when wrong.
func (s *Server) checkPassword(ctx context.Context, user uuid.UUID, pw string) error {
	u, err := s.d.Store.UserByID(ctx, user)
	if err != nil {
		return err
	}
	if u.PasswordHash != nil {
		if ok, _ := password.Check(pw, *u.PasswordHash); ok {
			return nil
		}
	}
	var v apperr.Violations
	v.Add("Password", "The password is wrong.")
	return v.Err()
}
