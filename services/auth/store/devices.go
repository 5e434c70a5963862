package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// Device is a trusted browser.
type Device struct {
	ID         uuid.UUID
	UserAgent  string
	CreatedAt  time.Time
	LastUsedAt time.Time
	ExpiresAt  time.Time
}

// NewDevice is a browser to trust.
type NewDevice struct {
	TokenHash []byte
	UserAgent string
	ExpiresAt time.Time
}

// UseTrustedDevice reports whether the device cookie's hash is a trusted
// browser of the user at the service's clock, and notes its use.
func (s *Store) UseTrustedDevice(ctx context.Context, userID uuid.UUID, tokenHash []byte, at time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE auth.trusted_devices SET last_used_at = now()
		WHERE user_id = $1 AND token_hash = $2 AND expires_at > $3`, userID, tokenHash, at)
	if err != nil {
		return false, fmt.Errorf("auth: trusted device: %w", db.Interpret(err))
	}
	return tag.RowsAffected() == 1, nil
}

// TrustedDevices lists the user's unexpired trusted browsers, newest first.
func (s *Store) TrustedDevices(ctx context.Context, userID uuid.UUID, at time.Time) ([]Device, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, user_agent, created_at, last_used_at, expires_at FROM auth.trusted_devices
		WHERE user_id = $1 AND expires_at > $2 ORDER BY created_at DESC, id DESC`, userID, at)
	if err != nil {
		return nil, fmt.Errorf("auth: trusted devices: %w", db.Interpret(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Device, error) {
		var d Device
		err := r.Scan(&d.ID, &d.UserAgent, &d.CreatedAt, &d.LastUsedAt, &d.ExpiresAt)
		return d, err
	})
	return out, wrapDB(err, "trusted devices")
}

func forgetDevices(ctx context.Context, tx pgx.Tx, userID uuid.UUID) error {
	_, err := tx.Exec(ctx, `DELETE FROM auth.trusted_devices WHERE user_id = $1`, userID)
	return wrapDB(err, "forget trusted devices")
}

// ForgetDevice forgets one of the user's trusted browsers (all of them
// with id uuid.Nil); db.ErrNotFound when the user has no such one.
func (s *Store) ForgetDevice(ctx context.Context, userID, id uuid.UUID, log LogEntry) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if id == uuid.Nil {
			if err := forgetDevices(ctx, tx, userID); err != nil {
				return err
			}
			return writeLog(ctx, tx, log)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM auth.trusted_devices WHERE user_id = $1 AND id = $2`, userID, id)
		if err != nil {
			return wrapDB(err, "forget trusted device")
		}
		if tag.RowsAffected() == 0 {
			return db.ErrNotFound
		}
		return writeLog(ctx, tx, log)
	})
	if err != nil {
		return fmt.Errorf("auth: forget device: %w", err)
	}
	return nil
}

// ErrNotPending reports that the session is not one waiting for its second factor.
var ErrNotPending = errors.New("session not waiting for a second factor")

// Completion is a session passing its second factor.
type Completion struct {
	// Pending is the session that passed the password.
	Pending uuid.UUID
	// Session replaces it (a new id: no fixation).
	Session NewSession
	// Device, when set, is a browser to trust from now on.
	Device *NewDevice
}

// CompleteMfa ends the pending session, starts its replacement and trusts
// the device, in one transaction; ErrNotPending when the session was not
// waiting (ended meanwhile, or passed by a concurrent request).
func (s *Store) CompleteMfa(ctx context.Context, c Completion) error {
	user := c.Session.UserID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE auth.sessions SET ended_at = now() WHERE id = $1 AND user_id = $2 AND mfa_pending AND ended_at IS NULL`,
			c.Pending, user)
		if err != nil {
			return wrapDB(err, "end pending session")
		}
		if tag.RowsAffected() == 0 {
			return ErrNotPending
		}
		if _, err := insertSession(ctx, tx, c.Session); err != nil {
			return err
		}
		if c.Device != nil {
			if err := trustDevice(ctx, tx, user, *c.Device); err != nil {
				return err
			}
			if err := writeLog(ctx, tx, LogEntry{UserID: user, Action: ActionDeviceTrusted, IPAddress: c.Session.IPAddress,
				UserAgent: c.Session.UserAgent}); err != nil {
				return err
			}
		}
		// No epoch move: no gateway caches a pending session for a tenant
		// (ValidateSession refuses it), and the auth routes read the
		// session row (so the ended one is 401 at once). Moving it would
		// drop every gateway's cached key validations at each sign-in.
		return nil
	})
	if err != nil {
		return fmt.Errorf("auth: complete mfa: %w", err)
	}
	return nil
}

func trustDevice(ctx context.Context, tx pgx.Tx, userID uuid.UUID, d NewDevice) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO auth.trusted_devices (id, user_id, token_hash, user_agent, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		id, userID, d.TokenHash, d.UserAgent, d.ExpiresAt)
	return wrapDB(err, "trust device")
}
