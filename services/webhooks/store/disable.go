package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Failing is a live endpoint whose delivery attempts have all failed since
// FirstFailure.
type Failing struct {
	TenantID     uuid.UUID
	ID           uuid.UUID
	FirstFailure time.Time
}

// failingSince is, for one endpoint e, the first failed delivery attempt
// after its last success and after it was last switched on: the start of
// its unbroken run of failures (null when its last attempt succeeded or it
// has none). Test events do not count: they are sent by hand.
const failingSince = `(
	SELECT min(a.attempted_at) FROM webhooks.attempts a
	WHERE a.tenant_id = e.tenant_id AND a.endpoint_id = e.id AND a.delivery_id IS NOT NULL AND NOT a.success
		AND a.attempted_at >= e.active_since
		AND a.attempted_at > coalesce((
			SELECT max(s.attempted_at) FROM webhooks.attempts s
			WHERE s.tenant_id = e.tenant_id AND s.endpoint_id = e.id AND s.delivery_id IS NOT NULL AND s.success), '-infinity'))`

// FailingEndpoints returns the live endpoints whose attempts have all
// failed since before cutoff.
func (s *Store) FailingEndpoints(ctx context.Context, cutoff time.Time) ([]Failing, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT f.tenant_id, f.id, f.first FROM (
			SELECT e.tenant_id, e.id, `+failingSince+` AS first
			FROM webhooks.endpoints e WHERE e.active AND e.deleted_at IS NULL
		) f WHERE f.first <= $1`, cutoff)
	if err != nil {
		return nil, fmt.Errorf("webhooks: failing endpoints: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Failing, error) {
		var f Failing
		err := r.Scan(&f.TenantID, &f.ID, &f.FirstFailure)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: failing endpoints: %w", err)
	}
	return out, nil
}

// DisableFailing switches a live endpoint off with reason, and writes its
// audit row (webhook_endpoint.updated, actor system) in the same
// transaction, if its attempts have still all failed since before cutoff
// (checked again under the endpoint's row lock: a success recorded since
// FailingEndpoints keeps it on). Its cursor and pending deliveries stay,
// so switching it back on resumes where it stopped. It reports whether it
// switched the endpoint off.
func (s *Store) DisableFailing(ctx context.Context, f Failing, cutoff time.Time, reason string) (bool, error) {
	var disabled bool
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhooks.endpoints
			WHERE tenant_id = $1 AND id = $2 AND active AND deleted_at IS NULL FOR UPDATE`, f.TenantID, f.ID))
		if errors.Is(err, db.ErrNotFound) {
			return nil // deleted or switched off meanwhile
		}
		if err != nil {
			return fmt.Errorf("lock endpoint: %w", err)
		}
		var still bool
		if err := tx.QueryRow(ctx, `SELECT coalesce(`+failingSince+` <= $3, false) FROM webhooks.endpoints e WHERE e.tenant_id = $1 AND e.id = $2`,
			f.TenantID, f.ID, cutoff).Scan(&still); err != nil {
			return fmt.Errorf("check failures: %w", err)
		}
		if !still {
			return nil
		}
		after, err := scanEndpoint(tx.QueryRow(ctx, `UPDATE webhooks.endpoints SET active = false, disabled_reason = $3, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+endpointColumns, f.TenantID, f.ID, reason))
		if err != nil {
			return fmt.Errorf("switch endpoint off: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: f.TenantID.String(), EntityType: EntityType, EntityID: f.ID.String(),
			Action: audit.Updated, Changes: audit.Diff(snapshot(before), snapshot(after)), Actor: "system"}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		disabled = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("webhooks: disable endpoint %s: %w", f.ID, err)
	}
	return disabled, nil
}
