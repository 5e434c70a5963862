package store

import (
	"context"
	"fmt"
	"time"

	"github.com/almoner/almoner/pkg/db"
)

// Pruned counts what one Prune deleted, by table.
type Pruned struct {
	Sessions, PasswordResets, EmailCodes, TrustedDevices, SecurityLog int64
}

// Total is every row Prune deleted.
func (p Pruned) Total() int64 {
	return p.Sessions + p.PasswordResets + p.EmailCodes + p.TrustedDevices + p.SecurityLog
}

// pruneBatch is how many rows one DELETE removes, so that a backlog is
// worked off in short statements, never one long transaction.
const pruneBatch = 1000

// pruneStatements delete a batch of rows that stopped working before $1:
// sessions ended or expired (not one an impersonation names: that record
// is kept, and its foreign key with it), reset links and emailed codes
// expired (a used one expires too), trusted browsers expired. Each
// returns how many rows it deleted.
var pruneStatements = []struct {
	name string
	sql  string
	into func(*Pruned) *int64
}{
	{"sessions", `DELETE FROM auth.sessions WHERE id IN (
		SELECT s.id FROM auth.sessions s WHERE coalesce(s.ended_at, s.expires_at) < $1
			AND NOT EXISTS (SELECT 1 FROM auth.impersonations i WHERE i.session_id = s.id)
		ORDER BY coalesce(s.ended_at, s.expires_at) LIMIT $2)`, func(p *Pruned) *int64 { return &p.Sessions }},
	{"password resets", `DELETE FROM auth.password_resets WHERE id IN (
		SELECT id FROM auth.password_resets WHERE expires_at < $1 LIMIT $2)`, func(p *Pruned) *int64 { return &p.PasswordResets }},
	{"email codes", `DELETE FROM auth.mfa_email_codes WHERE id IN (
		SELECT id FROM auth.mfa_email_codes WHERE expires_at < $1 LIMIT $2)`, func(p *Pruned) *int64 { return &p.EmailCodes }},
	{"trusted devices", `DELETE FROM auth.trusted_devices WHERE id IN (
		SELECT id FROM auth.trusted_devices WHERE expires_at < $1 LIMIT $2)`, func(p *Pruned) *int64 { return &p.TrustedDevices }},
}

// Prune deletes the credentials that stopped working before expiredBefore
// and, unless logBefore is zero, the security log's entries written
// before logBefore. It stops early, with what it deleted so far, when ctx
// ends.
func (s *Store) Prune(ctx context.Context, expiredBefore, logBefore time.Time) (Pruned, error) {
	var p Pruned
	for _, st := range pruneStatements {
		n, err := db.ExecBatches(ctx, s.pool, st.sql, pruneBatch, expiredBefore)
		*st.into(&p) += n
		if err != nil {
			return p, fmt.Errorf("auth: prune %s: %w", st.name, err)
		}
	}
	if !logBefore.IsZero() {
		n, err := db.ExecBatches(ctx, s.pool, `DELETE FROM auth.security_log WHERE id IN (
			SELECT id FROM auth.security_log WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, pruneBatch, logBefore)
		p.SecurityLog += n
		if err != nil {
			return p, fmt.Errorf("auth: prune security log: %w", err)
		}
	}
	return p, nil
}
