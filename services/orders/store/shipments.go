package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// NeedsShipment reports whether an order ships: it has item lines and a
// shipping address.
func NeedsShipment(o Order) bool { return len(o.Items) > 0 && o.Shipping != nil }

// queueShipmentRequest queues the order's shipment request (the outbox
// row) in the order's batch when the order ships, so the request commits
// with the order or not at all.
func queueShipmentRequest(b *pgx.Batch, o Order) {
	if NeedsShipment(o) {
		b.Queue(`INSERT INTO orders.shipment_requests (tenant_id, order_id) VALUES ($1, $2)`, o.TenantID, o.ID)
	}
}

// ShipmentRequest is an outbox row: an order whose shipment the inventory
// service has not confirmed yet.
type ShipmentRequest struct {
	TenantID, OrderID uuid.UUID
	CreatedAt         time.Time
}

// ShipmentRequests returns up to limit requests written before before,
// oldest first.
func (s *Store) ShipmentRequests(ctx context.Context, before time.Time, limit int) ([]ShipmentRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, order_id, created_at FROM orders.shipment_requests
		WHERE created_at < $1 ORDER BY created_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("orders: shipment requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ShipmentRequest])
	if err != nil {
		return nil, fmt.Errorf("orders: shipment requests: %w", err)
	}
	return out, nil
}

// DeleteShipmentRequest removes a delivered request.
func (s *Store) DeleteShipmentRequest(ctx context.Context, tenantID, orderID uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM orders.shipment_requests WHERE tenant_id = $1 AND order_id = $2`, tenantID, orderID); err != nil {
		return fmt.Errorf("orders: delete shipment request %s: %w", orderID, err)
	}
	return nil
}
