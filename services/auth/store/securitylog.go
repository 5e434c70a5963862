package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// Security log actions (docs/auth.md lists them).
const (
	ActionSignIn              = "sign_in"
	ActionSignInMfaPending    = "sign_in.mfa_pending"
	ActionSignInMfa           = "sign_in.mfa_verified"
	ActionSignInTrustedDevice = "sign_in.trusted_device"
	ActionPasswordReset       = "password.reset"
	ActionTotpEnrollStarted   = "mfa.totp.enrollment_started"
	ActionTotpEnabled         = "mfa.totp.enabled"
	ActionTotpDisabled        = "mfa.totp.disabled"
	ActionEmailEnrollStarted  = "mfa.email.enrollment_started"
	ActionEmailEnabled        = "mfa.email.enabled"
	ActionEmailDisabled       = "mfa.email.disabled"
	ActionRecoveryCodesIssued = "mfa.recovery_codes.issued"
	ActionRecoveryCodeUsed    = "mfa.recovery_code.used"
	ActionDeviceTrusted       = "mfa.trusted_device.added"
	ActionDeviceForgotten     = "mfa.trusted_device.removed"
	ActionDevicesForgotten    = "mfa.trusted_devices.removed"
	ActionEmailCodeSent       = "mfa.email.code_sent"
)

// LogEntry is a row to write in a user's security log: the action and
// where the request came from.
type LogEntry struct {
	UserID    uuid.UUID
	Action    string
	IPAddress string
	UserAgent string
}

// LogRow is a row of a user's security log.
type LogRow struct {
	ID        uuid.UUID
	At        time.Time
	Action    string
	IPAddress string
	UserAgent string
}

// writeLog adds e to the security log inside tx, with the change it records.
func writeLog(ctx context.Context, tx pgx.Tx, e LogEntry) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO auth.security_log (id, user_id, action, ip_address, user_agent) VALUES ($1, $2, $3, $4, $5)`,
		id, e.UserID, e.Action, e.IPAddress, e.UserAgent)
	return wrapDB(err, "write security log")
}

// SecurityLog returns the user's newest limit rows, newest first (ids are
// UUIDv7, so they sort by time).
func (s *Store) SecurityLog(ctx context.Context, userID uuid.UUID, limit int) ([]LogRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, created_at, action, ip_address, user_agent FROM auth.security_log
		WHERE user_id = $1 ORDER BY id DESC LIMIT $2`, userID, limit)
	if err != nil {
		return nil, fmt.Errorf("auth: security log: %w", db.Interpret(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LogRow, error) {
		var l LogRow
		err := r.Scan(&l.ID, &l.At, &l.Action, &l.IPAddress, &l.UserAgent)
		return l, err
	})
	return out, wrapDB(err, "security log")
}
