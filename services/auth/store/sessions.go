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

// NewSession is a session to start.
type NewSession struct {
	UserID    uuid.UUID
	TokenHash []byte
	UserAgent string
	IPAddress string
	ExpiresAt time.Time
	// MfaPending starts a session that must still pass a second factor.
	MfaPending bool
	// LogAction is the security log's action for the sign-in; empty is
	// ActionSignIn, or ActionSignInMfaPending with MfaPending.
	LogAction string
}

// Session is a row of auth.sessions.
type Session struct {
	ID         uuid.UUID
	UserID     uuid.UUID
	UserAgent  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
	MfaPending bool
	// Operator is whether the session's user is a platform operator, whose
	// session works on tenant routes only through an impersonation.
	Operator bool
}

func insertSession(ctx context.Context, tx pgx.Tx, n NewSession) (uuid.UUID, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO auth.sessions (id, user_id, token_hash, user_agent, expires_at, mfa_pending) VALUES ($1, $2, $3, $4, $5, $6)`,
		id, n.UserID, n.TokenHash, n.UserAgent, n.ExpiresAt, n.MfaPending); err != nil {
		return uuid.Nil, wrapDB(err, "insert session")
	}
	if _, err := tx.Exec(ctx, `UPDATE auth.users SET last_sign_in_at = now() WHERE id = $1`, n.UserID); err != nil {
		return uuid.Nil, wrapDB(err, "note sign-in")
	}
	action := n.LogAction
	if action == "" {
		action = ActionSignIn
		if n.MfaPending {
			action = ActionSignInMfaPending
		}
	}
	return id, writeLog(ctx, tx, LogEntry{UserID: n.UserID, Action: action, IPAddress: n.IPAddress, UserAgent: n.UserAgent})
}

// StartSession starts a session and notes the user's sign-in.
func (s *Store) StartSession(ctx context.Context, n NewSession) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		id, err = insertSession(ctx, tx, n)
		return err
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("auth: start session: %w", err)
	}
	return id, nil
}

const sessionColumns = `id, user_id, user_agent, created_at, last_seen_at, expires_at, mfa_pending,
	EXISTS (SELECT 1 FROM auth.users o WHERE o.id = user_id AND o.platform_role IS NOT NULL)`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	err := row.Scan(&s.ID, &s.UserID, &s.UserAgent, &s.CreatedAt, &s.LastSeenAt, &s.ExpiresAt, &s.MfaPending, &s.Operator)
	return s, err
}

// SessionByToken reads the open session with the token hash;
// db.ErrNotFound when none is open.
func (s *Store) SessionByToken(ctx context.Context, tokenHash []byte) (Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM auth.sessions WHERE token_hash = $1 AND ended_at IS NULL`, tokenHash))
	if err != nil {
		return Session{}, fmt.Errorf("auth: session: %w", db.Interpret(err))
	}
	return sess, nil
}

// SessionByID reads the user's open session id; db.ErrNotFound when it is
// not open.
func (s *Store) SessionByID(ctx context.Context, userID, id uuid.UUID) (Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM auth.sessions WHERE id = $1 AND user_id = $2 AND ended_at IS NULL`, id, userID))
	if err != nil {
		return Session{}, fmt.Errorf("auth: session: %w", db.Interpret(err))
	}
	return sess, nil
}

// TouchSession moves a session's last use to now.
func (s *Store) TouchSession(ctx context.Context, id uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `UPDATE auth.sessions SET last_seen_at = now() WHERE id = $1 AND ended_at IS NULL`, id)
	return wrapDB(err, "touch session")
}

// EndSession ends the user's session id and moves the validation epoch
// (gateways cache session validations); db.ErrNotFound when the user has
// no such open session.
func (s *Store) EndSession(ctx context.Context, userID, id uuid.UUID) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE auth.sessions SET ended_at = now() WHERE id = $1 AND user_id = $2 AND ended_at IS NULL`, id, userID)
		if err != nil {
			return wrapDB(err, "end session")
		}
		if tag.RowsAffected() == 0 {
			return db.ErrNotFound
		}
		// An operator's sign-out ends the impersonation it carried.
		if err := endImpersonations(ctx, tx, `session_id = $1`, EndSignedOut, id); err != nil {
			return err
		}
		return bumpEpoch(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("auth: end session: %w", err)
	}
	return nil
}

// ListSessions returns the user's open sessions, newest first.
func (s *Store) ListSessions(ctx context.Context, userID uuid.UUID) ([]Session, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM auth.sessions
		WHERE user_id = $1 AND ended_at IS NULL AND expires_at > now() ORDER BY created_at DESC, id DESC`, userID)
	if err != nil {
		return nil, wrapDB(err, "list sessions")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return out, wrapDB(err, "list sessions")
}
