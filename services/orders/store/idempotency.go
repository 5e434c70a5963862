package store

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Claim is what a request learns about its idempotency key.
type Claim struct {
	// Owned: this request holds the key now and must record the order
	// OrderID (or give the key back).
	Owned   bool
	OrderID uuid.UUID
	// Completed: the key's order is recorded; Response is the stored reply.
	Completed bool
	Response  []byte
	// SameRequest: the stored request hash equals this request's.
	SameRequest bool
}

// ClaimKey claims key for a request whose hash is hash, proposing orderID.
// A pending claim whose lease ran out (its owner crashed or gave up) is
// taken over with the same order id, so stock reservations and charges,
// idempotent by order id, are reused rather than repeated. A claim the
// sweeper is giving back ('sweeping') is never taken over: the request is
// told it is in progress until the sweeper releases the key.
func (s *Store) ClaimKey(ctx context.Context, tenantID uuid.UUID, key string, hash []byte, orderID uuid.UUID, lease time.Duration) (Claim, error) {
	leaseSecs := lease.Seconds()
	tag, err := s.pool.Exec(ctx, `INSERT INTO orders.idempotency_keys (tenant_id, key, request_hash, order_id, state, lease_until)
		VALUES ($1, $2, $3, $4, 'pending', now() + make_interval(secs => $5)) ON CONFLICT (tenant_id, key) DO NOTHING`,
		tenantID, key, hash, orderID, leaseSecs)
	if err != nil {
		return Claim{}, fmt.Errorf("orders: claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return Claim{Owned: true, OrderID: orderID, SameRequest: true}, nil
	}
	var c Claim
	var stored []byte
	var state string
	var expired bool
	err = s.pool.QueryRow(ctx, `SELECT request_hash, order_id, state, response, lease_until < now() FROM orders.idempotency_keys
		WHERE tenant_id = $1 AND key = $2`, tenantID, key).Scan(&stored, &c.OrderID, &state, &c.Response, &expired)
	if err != nil {
		// Given back between the insert and the read: try once more.
		return s.ClaimKey(ctx, tenantID, key, hash, orderID, lease)
	}
	c.SameRequest = bytes.Equal(stored, hash)
	c.Completed = state == "completed"
	if !c.Completed && expired && c.SameRequest {
		tag, err := s.pool.Exec(ctx, `UPDATE orders.idempotency_keys SET lease_until = now() + make_interval(secs => $4)
			WHERE tenant_id = $1 AND key = $2 AND state = 'pending' AND order_id = $3 AND lease_until < now()`, tenantID, key, c.OrderID, leaseSecs)
		if err != nil {
			return Claim{}, fmt.Errorf("orders: take over idempotency key: %w", err)
		}
		c.Owned = tag.RowsAffected() == 1
	}
	return c, nil
}

// ReleaseKey gives back a pending claim whose request recorded nothing, so
// the key can be used again.
func (s *Store) ReleaseKey(ctx context.Context, tenantID uuid.UUID, key string, orderID uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM orders.idempotency_keys WHERE tenant_id = $1 AND key = $2 AND order_id = $3 AND state = 'pending'`,
		tenantID, key, orderID)
	if err != nil {
		return fmt.Errorf("orders: release idempotency key: %w", err)
	}
	return nil
}

// ExpireKey ends a pending claim's lease but keeps its order id, so the
// next request with the key takes it over at once with the same order id.
// A claim no request takes over is swept once its lease has ended long
// enough ago (TakeAbandonedClaim).
func (s *Store) ExpireKey(ctx context.Context, tenantID uuid.UUID, key string, orderID uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `UPDATE orders.idempotency_keys SET lease_until = now() - interval '1 second'
		WHERE tenant_id = $1 AND key = $2 AND order_id = $3 AND state = 'pending'`, tenantID, key, orderID)
	if err != nil {
		return fmt.Errorf("orders: expire idempotency key: %w", err)
	}
	return nil
}

// ClaimNumber gives the order of a claimed key its number: the one the
// claim holds from an earlier attempt, else the next of the tenant's
// (which the claim then keeps).
func (s *Store) ClaimNumber(ctx context.Context, tenantID uuid.UUID, key string, orderID uuid.UUID) (int64, error) {
	var held *int64
	if err := s.pool.QueryRow(ctx, `SELECT order_number FROM orders.idempotency_keys WHERE tenant_id = $1 AND key = $2 AND order_id = $3`,
		tenantID, key, orderID).Scan(&held); err != nil {
		return 0, fmt.Errorf("orders: read claimed order number: %w", err)
	}
	if held != nil {
		return *held, nil
	}
	n, err := s.nextOrderNumber(ctx, tenantID)
	if err != nil {
		return 0, fmt.Errorf("orders: claim order number: %w", err)
	}
	var kept int64
	if err := s.pool.QueryRow(ctx, `UPDATE orders.idempotency_keys SET order_number = coalesce(order_number, $4)
		WHERE tenant_id = $1 AND key = $2 AND order_id = $3 RETURNING order_number`, tenantID, key, orderID, n).Scan(&kept); err != nil {
		return 0, fmt.Errorf("orders: keep claimed order number: %w", err)
	}
	return kept, nil
}

// PurgeKeys deletes completed idempotency records older than keep.
func (s *Store) PurgeKeys(ctx context.Context, keep time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM orders.idempotency_keys WHERE state = 'completed' AND created_at < now() - make_interval(secs => $1)`, keep.Seconds())
	if err != nil {
		return 0, fmt.Errorf("orders: purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
