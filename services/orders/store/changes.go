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

func lockOrder(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (Order, error) {
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

// recordVoid records the first done takes of a void: their payments
// Voided, and the order Voided once every take is done. Voiding is the
// soft delete of an order, so its audit row is order.deleted.
func recordVoid(ctx context.Context, tx pgx.Tx, o *Order, takes []PaymentTake, done int, actor string) error {
	for _, t := range takes[:done] {
		i := paymentIndex(*o, t.PaymentID)
		if i < 0 || o.Payments[i].Status == PaymentVoided {
			continue
		}
		if err := setPaymentStatus(ctx, tx, o.TenantID, o.ID, o.Payments[i], PaymentVoided, actor); err != nil {
			return err
		}
		o.Payments[i].Status = PaymentVoided
	}
	if done < len(takes) {
		return nil
	}
	return setOrderStatus(ctx, tx, o, StatusVoided, audit.Deleted, actor)
}

// paymentIndex is the position of payment id on o, or -1.
func paymentIndex(o Order, id uuid.UUID) int {
	for i, p := range o.Payments {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// setPaymentStatus moves one payment to status with its audit row.
func setPaymentStatus(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, p Payment, status, actor string) error {
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

// setOrderStatus moves a locked order to status with its audit row
// (action Updated, or Deleted for a void).
func setOrderStatus(ctx context.Context, tx pgx.Tx, o *Order, status, action, actor string) error {
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

// Refund says what to refund of an order.
type Refund struct {
	// AmountMinor is the amount; 0 means all that is left (of the payment
	// when PaymentID is set, else of the order).
	AmountMinor int64
	// PaymentID takes the refund from this payment only; nil takes it from
	// the payments in order.
	PaymentID *uuid.UUID
	Reason    string
	// Source is "api", or "processor" for a refund made at the processor
	// (its dashboard) and learnt from a notification.
	Source string
}

// refundLocked records a refund of amount from payment idx of o, whose
// row the transaction holds, made at the processor (its dashboard) and
// learnt from its notification: no processor is called. The caller has
// bounded amount by what the payment can still give back.
func refundLocked(ctx context.Context, tx pgx.Tx, o Order, idx int, amount int64, r Refund, actor string) (Order, error) {
	return applyRefund(ctx, tx, o, []refundTake{{idx, amount}}, uuid.Must(uuid.NewV7()), r, actor)
}

// applyRefund records a refund of o (locked) made of plan: each touched
// payment updated, the refund row, the order and the lines' shares, with
// their audit rows.
func applyRefund(ctx context.Context, tx pgx.Tx, o Order, plan []refundTake, refundID uuid.UUID, r Refund, actor string) (Order, error) {
	tenant := o.TenantID.String()
	var total int64
	for _, take := range plan {
		p := o.Payments[take.index]
		np := p
		np.RefundedMinor += take.amount
		np.Status = PaymentPartiallyRefunded
		if np.RefundedMinor == np.AmountMinor {
			np.Status = PaymentRefunded
		}
		if p.Status == PaymentDisputed {
			np.Status = PaymentDisputed // a dispute outranks the refund in the status; the amount still shows it
		}
		if _, err := tx.Exec(ctx, `UPDATE orders.order_payments SET refunded_minor = $4, status = $5 WHERE tenant_id = $1 AND order_id = $2 AND id = $3`,
			o.TenantID, o.ID, p.ID, np.RefundedMinor, np.Status); err != nil {
			return Order{}, fmt.Errorf("update refunded payment: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityOrderPayment, EntityID: p.ID.String(), Action: audit.Updated,
			Changes: map[string]audit.Change{"paymentStatus": {Old: p.Status, New: np.Status}, "refundedAmountMinor": {Old: p.RefundedMinor, New: np.RefundedMinor}}, Actor: actor}); err != nil {
			return Order{}, fmt.Errorf("record audit of refunded payment: %w", err)
		}
		o.Payments[take.index] = np
		total += take.amount
	}
	newStatus := StatusPartiallyRefunded
	if o.RefundedMinor+total == o.TotalMinor {
		newStatus = StatusRefunded
	}
	var paymentID *uuid.UUID
	if len(plan) == 1 {
		paymentID = &o.Payments[plan[0].index].ID
	}
	source := r.Source
	if source == "" {
		source = "api"
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders.refunds (tenant_id, order_id, id, amount_minor, reason, actor, source, payment_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		o.TenantID, o.ID, refundID, total, r.Reason, actor, source, paymentID); err != nil {
		return Order{}, fmt.Errorf("insert refund: %w", err)
	}
	if err := tx.QueryRow(ctx, `UPDATE orders.orders SET status = $3, refunded_minor = refunded_minor + $4, updated_at = now()
		WHERE tenant_id = $1 AND id = $2 RETURNING updated_at`, o.TenantID, o.ID, newStatus, total).Scan(&o.UpdatedAt); err != nil {
		return Order{}, fmt.Errorf("update refunded order: %w", err)
	}
	// Reports read each line's share of the refunds; it is stored here,
	// under the order's lock, so the report views stay plain joins.
	if _, err := tx.Exec(ctx, `SELECT orders.apportion_refund($1, $2)`, o.TenantID, o.ID); err != nil {
		return Order{}, fmt.Errorf("apportion refund: %w", err)
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityOrder, EntityID: o.ID.String(), Action: audit.Updated,
		Changes: map[string]audit.Change{"orderStatus": {Old: o.Status, New: newStatus}, "refundedAmountMinor": {Old: o.RefundedMinor, New: o.RefundedMinor + total}}, Actor: actor}); err != nil {
		return Order{}, fmt.Errorf("record audit of refunded order: %w", err)
	}
	o.Status, o.RefundedMinor = newStatus, o.RefundedMinor+total
	return o, nil
}

// refundTake is the part of a refund one payment gives back.
type refundTake struct {
	index  int
	amount int64
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
