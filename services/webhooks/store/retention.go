package store

import (
	"context"
	"fmt"
	"time"

	"github.com/almoner/almoner/pkg/db"
)

// pruneBatch is how many deliveries (or test attempts) one statement
// deletes: a backlog goes in short statements, never one long transaction.
const pruneBatch = 1000

// Pruned counts what one PruneDeliveries deleted.
type Pruned struct {
	// Deliveries and their Attempts; TestAttempts are test sends';
	// Orphans are pending deliveries of deleted endpoints.
	Deliveries, Attempts, TestAttempts, Orphans int64
}

// PruneDeliveries deletes the deliveries that finished (succeeded or were
// abandoned) and were queued before before, each with its attempts in the
// same statement, the test sends' attempts made before it, and the
// pending deliveries of deleted endpoints (never sent; their attempts
// stay). Another pending delivery stays whatever its age (an endpoint
// switched off keeps its backlog). It stops early, with what it deleted
// so far, when ctx ends.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (Pruned, error) {
	var p Pruned
	for ctx.Err() == nil {
		var d, a int64
		err := s.pool.QueryRow(ctx, `
			WITH d AS (
				DELETE FROM webhooks.deliveries WHERE (tenant_id, id) IN (
					SELECT tenant_id, id FROM webhooks.deliveries
					WHERE state <> 'pending' AND enqueued_at < $1 ORDER BY enqueued_at LIMIT $2)
				RETURNING tenant_id, id),
			a AS (
				DELETE FROM webhooks.attempts a USING d WHERE a.tenant_id = d.tenant_id AND a.delivery_id = d.id
				RETURNING 1)
			SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM a)`, before, pruneBatch).Scan(&d, &a)
		if err != nil {
			return p, fmt.Errorf("webhooks: prune deliveries: %w", err)
		}
		p.Deliveries += d
		p.Attempts += a
		if d < pruneBatch {
			break
		}
	}
	// Pending deliveries of deleted endpoints: DeleteEndpoint drops them
	// since session 16; these are the ones of endpoints deleted before.
	orphans, err := db.ExecBatches(ctx, s.pool, `DELETE FROM webhooks.deliveries WHERE (tenant_id, id) IN (
		SELECT d.tenant_id, d.id FROM webhooks.deliveries d JOIN webhooks.endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
		WHERE d.state = 'pending' AND e.deleted_at IS NOT NULL LIMIT $1)`, pruneBatch)
	p.Orphans = orphans
	if err != nil {
		return p, fmt.Errorf("webhooks: prune pending deliveries of deleted endpoints: %w", err)
	}
	n, err := db.ExecBatches(ctx, s.pool, `DELETE FROM webhooks.attempts WHERE (tenant_id, id) IN (
		SELECT tenant_id, id FROM webhooks.attempts WHERE delivery_id IS NULL AND attempted_at < $1 ORDER BY attempted_at LIMIT $2)`,
		pruneBatch, before)
	p.TestAttempts = n
	if err != nil {
		return p, fmt.Errorf("webhooks: prune test attempts: %w", err)
	}
	return p, ctx.Err()
}
