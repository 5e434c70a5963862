package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// BacklogError refuses a replay or redelivery that would give the tenant
// more pending replayed and redelivered deliveries than its limit.
type BacklogError struct {
	// Pending is how many the tenant already has pending.
	Pending int
	// Adding is how many the refused call would have queued.
	Adding int
	// Limit is the most the tenant may have pending.
	Limit int
}

func (e *BacklogError) Error() string {
	return fmt.Sprintf("%d replayed or redelivered deliveries pending, %d more would pass the limit of %d", e.Pending, e.Adding, e.Limit)
}

// checkBacklog takes the tenant's recovery lock and fails with a
// *BacklogError when the tenant's pending replay and redelivery
// deliveries plus adding would be more than limit (no check when limit is
// 0). The transaction advisory lock makes the count and the insert that
// follows one step: two calls at once do not both see room for their
// deliveries. Deliveries of deleted endpoints do not count. The count is a statement after the lock, so under READ
// COMMITTED it sees what the previous holder committed. Index
// deliveries_recovery_pending (migration 00005) holds exactly the rows it
// counts.
func checkBacklog(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, adding, limit int) error {
	if limit <= 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "webhooks.recovery:"+tenantID.String()); err != nil {
		return fmt.Errorf("lock the tenant's recovery backlog: %w", err)
	}
	var pending int
	// A deleted endpoint's pending deliveries are never sent and would
	// count for ever; an inactive one's are sent once it is switched on.
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries d
		JOIN webhooks.endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
		WHERE d.tenant_id = $1 AND d.state = 'pending' AND d.kind <> 'event' AND e.deleted_at IS NULL`, tenantID).Scan(&pending); err != nil {
		return fmt.Errorf("count the tenant's recovery backlog: %w", err)
	}
	if pending+adding > limit {
		return &BacklogError{Pending: pending, Adding: adding, Limit: limit}
	}
	return nil
}
