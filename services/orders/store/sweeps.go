package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// AbandonedClaim is a keyed order's claim the sweeper has taken over: its
// request recorded no order, and no retry came for it.
type AbandonedClaim struct {
	TenantID uuid.UUID
	Key      string
	// OrderID is the order id the claim's charges were made for.
	OrderID uuid.UUID
	// Charged is true when the request got as far as charging: it took the
	// order's number, which a request takes just before its first
	// processor charge. A claim without one never asked a processor.
	Charged bool
	// LeaseUntil is the sweeper's lease, which also tells its take-over
	// apart from a later one's: only the holder may release the claim.
	LeaseUntil time.Time
}

// TakeAbandonedClaim takes over one claim left pending with its lease
// ended more than after ago (a request that failed while a charge's
// outcome was unknown and was never retried, or whose process died), or
// one being swept whose sweeper's lease ended (a sweep that failed, or
// died): it becomes 'sweeping' under a lease of its own. ok is false when
// none is due.
//
// The take-over is one UPDATE of a row locked with SKIP LOCKED, so two
// sweepers never take the same claim, and a client's retry racing it
// either takes the claim first (its lease then keeps the sweeper out) or
// finds it 'sweeping' and is told the order is in progress. The claims of
// every tenant are swept; each later statement names the claim's tenant.
func (s *Store) TakeAbandonedClaim(ctx context.Context, after, lease time.Duration) (AbandonedClaim, bool, error) {
	var c AbandonedClaim
	err := s.pool.QueryRow(ctx, `UPDATE orders.idempotency_keys k SET state = 'sweeping', lease_until = now() + make_interval(secs => $2)
		FROM (SELECT tenant_id, key FROM orders.idempotency_keys
			WHERE state <> 'completed' AND ((state = 'pending' AND lease_until < now() - make_interval(secs => $1))
				OR (state = 'sweeping' AND lease_until < now()))
			ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED) due
		WHERE k.tenant_id = due.tenant_id AND k.key = due.key
		RETURNING k.tenant_id, k.key, k.order_id, k.order_number IS NOT NULL, k.lease_until`,
		after.Seconds(), lease.Seconds()).Scan(&c.TenantID, &c.Key, &c.OrderID, &c.Charged, &c.LeaseUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return AbandonedClaim{}, false, nil
	}
	if err != nil {
		return AbandonedClaim{}, false, fmt.Errorf("orders: take abandoned idempotency claim: %w", err)
	}
	return c, true, nil
}

// ReleaseSweptClaim deletes a swept claim, so that the key can be used
// again for a new order. It reports false, deleting nothing, when the
// claim is no longer this sweep's (its lease ran out and another sweep
// took it over).
func (s *Store) ReleaseSweptClaim(ctx context.Context, c AbandonedClaim) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM orders.idempotency_keys
		WHERE tenant_id = $1 AND key = $2 AND order_id = $3 AND state = 'sweeping' AND lease_until = $4`,
		c.TenantID, c.Key, c.OrderID, c.LeaseUntil)
	if err != nil {
		return false, fmt.Errorf("orders: release swept idempotency claim: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
