package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// lockTimeout bounds how long a change waits for an order's row lock.
const lockTimeout = "15s"

// LockOrder reads an order with its lines and holds its row until the
// transaction ends, waiting at most lockTimeout for it.
func LockOrder(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (Order, error) {
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+lockTimeout+`'`); err != nil {
		return Order{}, fmt.Errorf("lock order: %w", err)
	}
	o, err := scanOrder(tx.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders.orders WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
	if err != nil {
		return Order{}, fmt.Errorf("lock order: %w", db.Interpret(err))
	}
	os := []Order{o}
	if err := loadLines(ctx, tx, tenantID, os); err != nil {
		return Order{}, fmt.Errorf("lock order: %w", err)
	}
	return os[0], nil
}

// PaymentIndex is the position of payment id on o, or -1.
func PaymentIndex(o Order, id uuid.UUID) int {
	for i, p := range o.Payments {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// SetPaymentStatus moves one payment to status with its audit row.
func SetPaymentStatus(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, p Payment, status, actor string) error {
	if _, err := tx.Exec(ctx, `UPDATE orders.order_payments SET status = $4 WHERE tenant_id = $1 AND order_id = $2 AND id = $3`,
		tenantID, orderID, p.ID, status); err != nil {
		return fmt.Errorf("update payment status: %w", err)
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityOrderPayment, EntityID: p.ID.String(), Action: audit.Updated,
		Changes: map[string]audit.Change{"paymentStatus": {Old: p.Status, New: status}}, Actor: actor}); err != nil {
		return fmt.Errorf("record audit of payment status: %w", err)
	}
	return nil
}

// SetOrderStatus moves a locked order to status with its audit row
// (action Updated, or Deleted for a void).
func SetOrderStatus(ctx context.Context, tx pgx.Tx, o *Order, status, action, actor string) error {
	if err := tx.QueryRow(ctx, `UPDATE orders.orders SET status = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING updated_at`,
		o.TenantID, o.ID, status).Scan(&o.UpdatedAt); err != nil {
		return fmt.Errorf("update order status: %w", err)
	}
	e := audit.Entry{TenantID: o.TenantID.String(), EntityType: EntityOrder, EntityID: o.ID.String(), Action: action, Actor: actor}
	if action == audit.Updated {
		e.Changes = map[string]audit.Change{"orderStatus": {Old: o.Status, New: status}}
	}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit of order status: %w", err)
	}
	o.Status = status
	return nil
}

// Refundable reports whether a payment can give money back.
func Refundable(p Payment) bool {
	switch p.Status {
	case PaymentCaptured, PaymentPartiallyRefunded, PaymentDisputed:
		return p.AmountMinor > p.RefundedMinor
	}
	return false
}

// RefundableMinor is what a refund naming p may still give back: nothing
// unless p was collected.
func (p Payment) RefundableMinor() int64 {
	if !Refundable(p) {
		return 0
	}
	return p.AmountMinor - p.RefundedMinor
}
