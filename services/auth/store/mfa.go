package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
)

// Errors of the MFA store.
var (
	// ErrFactorOn: the factor is on already.
	ErrFactorOn = errors.New("factor already on")
	// ErrNoEnrollment: no enrollment is under way, or (for recovery codes)
	// the user has no factor.
	ErrNoEnrollment = errors.New("no enrollment under way")
	// ErrCodeInvalid: the code is unknown, used or expired, or a TOTP step
	// not later than the last one accepted.
	ErrCodeInvalid = errors.New("code invalid")
)

// The second factors.
const (
	FactorTotp  = "totp"
	FactorEmail = "email"
)

// MfaState is a user's second factors.
type MfaState struct {
	// TotpSecret is the sealed secret, of an enrollment or of the factor;
	// nil for none.
	TotpSecret     []byte
	TotpEnabled    bool
	TotpLastStep   int64
	EmailEnabled   bool
	RecoveryLeft   int
	TrustedDevices int
	// Operator is whether the user has a platform role: MfaState reads
	// it, so that sign-in never trusts an operator's browser.
	Operator bool
}

// HasFactor reports whether any second factor is on.
func (m MfaState) HasFactor() bool { return m.TotpEnabled || m.EmailEnabled }

// MfaState reads the user's factors; a user without any is the zero state
// (with the counts).
func (s *Store) MfaState(ctx context.Context, userID uuid.UUID, at time.Time) (MfaState, error) {
	var m MfaState
	err := s.pool.QueryRow(ctx, `
		SELECT f.totp_secret, coalesce(f.totp_enabled, false), coalesce(f.totp_last_step, 0), coalesce(f.email_enabled, false),
		       (SELECT count(*) FROM auth.recovery_codes r WHERE r.user_id = $1 AND r.used_at IS NULL),
		       (SELECT count(*) FROM auth.trusted_devices d WHERE d.user_id = $1 AND d.expires_at > $2),
		       EXISTS (SELECT 1 FROM auth.users o WHERE o.id = $1 AND o.platform_role IS NOT NULL)
		FROM (SELECT $1::uuid AS id) u LEFT JOIN auth.user_mfa f ON f.user_id = u.id`, userID, at).
		Scan(&m.TotpSecret, &m.TotpEnabled, &m.TotpLastStep, &m.EmailEnabled, &m.RecoveryLeft, &m.TrustedDevices, &m.Operator)
	if err != nil {
		return MfaState{}, fmt.Errorf("auth: mfa state: %w", db.Interpret(err))
	}
	return m, nil
}

// lockMfa reads the user's row of auth.user_mfa locked, creating it.
func lockMfa(ctx context.Context, tx pgx.Tx, userID uuid.UUID) (MfaState, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO auth.user_mfa (user_id) VALUES ($1) ON CONFLICT DO NOTHING`, userID); err != nil {
		return MfaState{}, wrapDB(err, "add mfa row")
	}
	var m MfaState
	err := tx.QueryRow(ctx, `SELECT totp_secret, totp_enabled, totp_last_step, email_enabled FROM auth.user_mfa WHERE user_id = $1 FOR UPDATE`, userID).
		Scan(&m.TotpSecret, &m.TotpEnabled, &m.TotpLastStep, &m.EmailEnabled)
	return m, wrapDB(err, "lock mfa row")
}

// StartTotp keeps a new sealed secret for the user to confirm;
// ErrFactorOn while TOTP is on.
func (s *Store) StartTotp(ctx context.Context, userID uuid.UUID, sealed []byte, log LogEntry) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		m, err := lockMfa(ctx, tx, userID)
		if err != nil {
			return err
		}
		if m.TotpEnabled {
			return ErrFactorOn
		}
		if _, err := tx.Exec(ctx, `UPDATE auth.user_mfa SET totp_secret = $2, updated_at = now() WHERE user_id = $1`, userID, sealed); err != nil {
			return wrapDB(err, "keep totp secret")
		}
		return writeLog(ctx, tx, log)
	})
	if err != nil {
		return fmt.Errorf("auth: start totp: %w", err)
	}
	return nil
}

// Enabling is a factor being turned on.
type Enabling struct {
	UserID uuid.UUID
	// Check reads the locked state and returns the TOTP step of the
	// code (0 for email), or an error that stops the change.
	Check func(tx pgx.Tx, m MfaState) (int64, error)
	// Recovery are the hashes of the codes to keep when this is the
	// user's first factor.
	Recovery [][]byte
	Log      LogEntry
}

// EnableTotp turns TOTP on, noting the step of the confirming code (which
// so cannot be used again). It reports whether it was the user's first
// factor, whose recovery codes it then keeps.
func (s *Store) EnableTotp(ctx context.Context, e Enabling) (bool, error) {
	return s.enable(ctx, e, func(m MfaState) error {
		if m.TotpEnabled {
			return ErrFactorOn
		}
		if m.TotpSecret == nil {
			return ErrNoEnrollment
		}
		return nil
	}, func(tx pgx.Tx, step int64) error {
		_, err := tx.Exec(ctx, `UPDATE auth.user_mfa SET totp_enabled = true, totp_last_step = $2, updated_at = now() WHERE user_id = $1`, e.UserID, step)
		return wrapDB(err, "turn totp on")
	})
}

// EnableEmail turns email codes on (Check spends the code); it reports
// whether it was the user's first factor.
func (s *Store) EnableEmail(ctx context.Context, e Enabling) (bool, error) {
	return s.enable(ctx, e, func(m MfaState) error {
		if m.EmailEnabled {
			return ErrFactorOn
		}
		return nil
	}, func(tx pgx.Tx, _ int64) error {
		_, err := tx.Exec(ctx, `UPDATE auth.user_mfa SET email_enabled = true, updated_at = now() WHERE user_id = $1`, e.UserID)
		return wrapDB(err, "turn email codes on")
	})
}

// enable locks the user's factors, refuses what allowed refuses, checks
// the code (e.Check), turns the factor on (set), keeps the recovery codes
// of a first factor and logs, in one transaction.
func (s *Store) enable(ctx context.Context, e Enabling, allowed func(MfaState) error, set func(pgx.Tx, int64) error) (bool, error) {
	first := false
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		m, err := lockMfa(ctx, tx, e.UserID)
		if err != nil {
			return err
		}
		if err := allowed(m); err != nil {
			return err
		}
		step, err := e.Check(tx, m)
		if err != nil {
			return err
		}
		if err := set(tx, step); err != nil {
			return err
		}
		if first = !m.HasFactor(); first {
			if err := replaceRecovery(ctx, tx, e.UserID, e.Recovery); err != nil {
				return err
			}
		}
		if err := writeLog(ctx, tx, e.Log); err != nil {
			return err
		}
		// mfa:required tenants answer differently once a factor is on.
		return bumpEpoch(ctx, tx)
	})
	if err != nil {
		return false, fmt.Errorf("auth: enable factor: %w", err)
	}
	return first, nil
}

// UseTotpStep notes that the user's code of step was accepted, unless a
// code of that step or a later one was (ErrCodeInvalid): two requests with
// one code cannot both pass.
func (s *Store) UseTotpStep(ctx context.Context, userID uuid.UUID, step int64) error {
	tag, err := s.pool.Exec(ctx, `UPDATE auth.user_mfa SET totp_last_step = $2 WHERE user_id = $1 AND totp_enabled AND totp_last_step < $2`, userID, step)
	if err != nil {
		return fmt.Errorf("auth: use totp step: %w", db.Interpret(err))
	}
	if tag.RowsAffected() == 0 {
		return ErrCodeInvalid
	}
	return nil
}

// DisableFactor turns a factor off (and drops a TOTP enrollment under
// way) and forgets every trusted device; with no factor left the recovery
// codes go too. A factor that was off changes nothing else and logs
// nothing.
func (s *Store) DisableFactor(ctx context.Context, userID uuid.UUID, factor string, log LogEntry) error {
	update := `UPDATE auth.user_mfa SET email_enabled = false, updated_at = now() WHERE user_id = $1`
	if factor == FactorTotp {
		update = `UPDATE auth.user_mfa SET totp_enabled = false, totp_secret = NULL, updated_at = now() WHERE user_id = $1`
	}
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		m, err := lockMfa(ctx, tx, userID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, update, userID); err != nil {
			return wrapDB(err, "turn factor off")
		}
		if (factor == FactorTotp && !m.TotpEnabled) || (factor == FactorEmail && !m.EmailEnabled) {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM auth.recovery_codes WHERE user_id = $1
			AND NOT EXISTS (SELECT 1 FROM auth.user_mfa WHERE user_id = $1 AND (totp_enabled OR email_enabled))`, userID); err != nil {
			return wrapDB(err, "drop recovery codes")
		}
		if err := forgetDevices(ctx, tx, userID); err != nil {
			return err
		}
		if err := writeLog(ctx, tx, log); err != nil {
			return err
		}
		return bumpEpoch(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("auth: disable factor: %w", err)
	}
	return nil
}

// CreateEmailCode keeps the hash of a code mailed to the user, queues its
// email and logs the send, in one transaction.
func (s *Store) CreateEmailCode(ctx context.Context, userID uuid.UUID, hash []byte, expires time.Time, msg mail.Message, log LogEntry) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO auth.mfa_email_codes (id, user_id, code_hash, expires_at) VALUES ($1, $2, $3, $4)`,
			id, userID, hash, expires); err != nil {
			return wrapDB(err, "insert email code")
		}
		if _, err := mail.Enqueue(ctx, tx, msg); err != nil {
			return err
		}
		return writeLog(ctx, tx, log)
	})
	if err != nil {
		return fmt.Errorf("auth: email code: %w", err)
	}
	return nil
}

// UseEmailCodeIn spends the user's unexpired code with hash, at the
// service's clock, inside tx; ErrCodeInvalid when there is none.
func UseEmailCodeIn(ctx context.Context, tx pgx.Tx, userID uuid.UUID, hash []byte, at time.Time) error {
	return useEmailCode(ctx, tx, userID, hash, at)
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func useEmailCode(ctx context.Context, q execer, userID uuid.UUID, hash []byte, at time.Time) error {
	tag, err := q.Exec(ctx, `UPDATE auth.mfa_email_codes SET used_at = now()
		WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL AND expires_at > $3`, userID, hash, at)
	if err != nil {
		return wrapDB(err, "use email code")
	}
	if tag.RowsAffected() == 0 {
		return ErrCodeInvalid
	}
	return nil
}

// UseEmailCode spends the user's unexpired code with hash, at the
// service's clock; ErrCodeInvalid when there is none.
func (s *Store) UseEmailCode(ctx context.Context, userID uuid.UUID, hash []byte, at time.Time) error {
	return useEmailCode(ctx, s.pool, userID, hash, at)
}

// UseRecoveryCode spends one of the user's recovery codes; ErrCodeInvalid
// when it is not one or was used.
func (s *Store) UseRecoveryCode(ctx context.Context, userID uuid.UUID, hash []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE auth.recovery_codes SET used_at = now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`, userID, hash)
	if err != nil {
		return fmt.Errorf("auth: use recovery code: %w", db.Interpret(err))
	}
	if tag.RowsAffected() == 0 {
		return ErrCodeInvalid
	}
	return nil
}

func replaceRecovery(ctx context.Context, tx pgx.Tx, userID uuid.UUID, hashes [][]byte) error {
	if _, err := tx.Exec(ctx, `DELETE FROM auth.recovery_codes WHERE user_id = $1`, userID); err != nil {
		return wrapDB(err, "drop recovery codes")
	}
	_, err := tx.Exec(ctx, `INSERT INTO auth.recovery_codes (user_id, code_hash) SELECT $1, h FROM unnest($2::bytea[]) h`, userID, hashes)
	return wrapDB(err, "insert recovery codes")
}

// ReplaceRecoveryCodes swaps the user's recovery codes for new ones and
// forgets every trusted device; ErrNoEnrollment when no factor is on.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, userID uuid.UUID, hashes [][]byte, log LogEntry) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		m, err := lockMfa(ctx, tx, userID)
		if err != nil {
			return err
		}
		if !m.HasFactor() {
			return ErrNoEnrollment
		}
		if err := replaceRecovery(ctx, tx, userID, hashes); err != nil {
			return err
		}
		if err := forgetDevices(ctx, tx, userID); err != nil {
			return err
		}
		return writeLog(ctx, tx, log)
	})
	if err != nil {
		return fmt.Errorf("auth: recovery codes: %w", err)
	}
	return nil
}
