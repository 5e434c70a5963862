package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
)

// ErrResetInvalid reports that no reset has the token, or it was used or
// has expired.
var ErrResetInvalid = errors.New("password reset invalid")

// CreateReset writes a reset of the user's password and queues its email,
// in one transaction.
func (s *Store) CreateReset(ctx context.Context, userID uuid.UUID, tokenHash []byte, expires time.Time, msg mail.Message) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO auth.password_resets (id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)`,
			id, userID, tokenHash, expires); err != nil {
			return wrapDB(err, "insert password reset")
		}
		_, err := mail.Enqueue(ctx, tx, msg)
		return err
	})
	if err != nil {
		return fmt.Errorf("auth: password reset: %w", err)
	}
	return nil
}

// ResetUser returns the user of an unused, unexpired reset token.
func (s *Store) ResetUser(ctx context.Context, tokenHash []byte) (User, error) {
	var u User
	err := s.pool.QueryRow(ctx, `
		SELECT u.id, u.email FROM auth.password_resets r JOIN auth.users u ON u.id = r.user_id
		WHERE r.token_hash = $1 AND r.used_at IS NULL AND r.expires_at > now()`, tokenHash).Scan(&u.ID, &u.Email)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, ErrResetInvalid
	}
	return u, wrapDB(err, "read password reset")
}

// ConfirmReset uses the reset token once, sets the user's password, ends
// the user's other resets, every one of their sessions and trusted
// devices, and logs the reset, in one transaction.
func (s *Store) ConfirmReset(ctx context.Context, tokenHash []byte, passwordHash string, log LogEntry) error {
	userID := log.UserID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE auth.password_resets SET used_at = now()
			WHERE token_hash = $1 AND user_id = $2 AND used_at IS NULL AND expires_at > now()`, tokenHash, userID)
		if err != nil {
			return wrapDB(err, "use password reset")
		}
		if tag.RowsAffected() == 0 {
			return ErrResetInvalid
		}
		for _, stmt := range []string{
			`UPDATE auth.password_resets SET used_at = now() WHERE user_id = $1 AND used_at IS NULL`,
			`UPDATE auth.sessions SET ended_at = now() WHERE user_id = $1 AND ended_at IS NULL`,
			`DELETE FROM auth.trusted_devices WHERE user_id = $1`,
		} {
			if _, err := tx.Exec(ctx, stmt, userID); err != nil {
				return wrapDB(err, "end the user's resets and sessions")
			}
		}
		if _, err = tx.Exec(ctx, `UPDATE auth.users SET password_hash = $2, updated_at = now() WHERE id = $1`, userID, passwordHash); err != nil {
			return wrapDB(err, "set password")
		}
		if err := writeLog(ctx, tx, log); err != nil {
			return err
		}
		// Gateways cache session validations.
		return bumpEpoch(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("auth: confirm password reset: %w", err)
	}
	return nil
}
