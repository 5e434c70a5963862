package changestore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/services/orders/changes/refund"
	"github.com/almoner/almoner/services/orders/store"
)

// recordVoid records the first done takes of a void: their payments
// Voided, and the order Voided once every take is done. Voiding is the
// soft delete of an order, so its audit row is order.deleted.
func recordVoid(ctx context.Context, tx pgx.Tx, o *store.Order, takes []PaymentTake, done int, actor string) error {
	for _, t := range takes[:done] {
		i := store.PaymentIndex(*o, t.PaymentID)
		if i < 0 || o.Payments[i].Status == store.PaymentVoided {
			continue
		}
		if err := store.SetPaymentStatus(ctx, tx, o.TenantID, o.ID, o.Payments[i], store.PaymentVoided, actor); err != nil {
			return err
		}
		o.Payments[i].Status = store.PaymentVoided
	}
	if done < len(takes) {
		return nil
	}
	return store.SetOrderStatus(ctx, tx, o, store.StatusVoided, audit.Deleted, actor)
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

// RefundLocked records a refund of amount from payment idx of o, whose
// row the transaction holds, made at the processor (its dashboard) and
// learnt from its notification: no processor is called. The caller has
// bounded amount by what the payment can still give back.
func RefundLocked(ctx context.Context, tx pgx.Tx, o store.Order, idx int, amount int64, r Refund, actor string) (store.Order, error) {
	return applyRefund(ctx, tx, o, []refundTake{{idx, amount}}, uuid.Must(uuid.NewV7()), r, actor)
}

// applyRefund records a refund of o (locked) made of plan: each touched
// payment updated, the refund row, the order and the lines' shares, with
// their audit rows.
func applyRefund(ctx context.Context, tx pgx.Tx, o store.Order, plan []refundTake, refundID uuid.UUID, r Refund, actor string) (store.Order, error) {
	tenant := o.TenantID.String()
	var total int64
	for _, take := range plan {
		p := o.Payments[take.index]
		np := refund.Payment(p, take.amount)
		if _, err := tx.Exec(ctx, `UPDATE orders.order_payments SET refunded_minor = $4, status = $5 WHERE tenant_id = $1 AND order_id = $2 AND id = $3`,
			o.TenantID, o.ID, p.ID, np.RefundedMinor, np.Status); err != nil {
			return store.Order{}, fmt.Errorf("update refunded payment: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: store.EntityOrderPayment, EntityID: p.ID.String(), Action: audit.Updated,
			Changes: map[string]audit.Change{"paymentStatus": {Old: p.Status, New: np.Status}, "refundedAmountMinor": {Old: p.RefundedMinor, New: np.RefundedMinor}}, Actor: actor}); err != nil {
			return store.Order{}, fmt.Errorf("record audit of refunded payment: %w", err)
		}
		o.Payments[take.index] = np
		total += take.amount
	}
	newStatus := refund.OrderStatus(o, total)
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
		return store.Order{}, fmt.Errorf("insert refund: %w", err)
	}
	if err := tx.QueryRow(ctx, `UPDATE orders.orders SET status = $3, refunded_minor = refunded_minor + $4, updated_at = now()
		WHERE tenant_id = $1 AND id = $2 RETURNING updated_at`, o.TenantID, o.ID, newStatus, total).Scan(&o.UpdatedAt); err != nil {
		return store.Order{}, fmt.Errorf("update refunded order: %w", err)
	}
	// Reports read each line's share of the refunds; it is stored here,
	// under the order's lock, so the report views stay plain joins.
	if _, err := tx.Exec(ctx, `SELECT orders.apportion_refund($1, $2)`, o.TenantID, o.ID); err != nil {
		return store.Order{}, fmt.Errorf("apportion refund: %w", err)
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: store.EntityOrder, EntityID: o.ID.String(), Action: audit.Updated,
		Changes: map[string]audit.Change{"orderStatus": {Old: o.Status, New: newStatus}, "refundedAmountMinor": {Old: o.RefundedMinor, New: o.RefundedMinor + total}}, Actor: actor}); err != nil {
		return store.Order{}, fmt.Errorf("record audit of refunded order: %w", err)
	}
	o.Status, o.RefundedMinor = newStatus, o.RefundedMinor+total
	return o, nil
}

// refundTake is the part of a refund one payment gives back.
type refundTake struct {
	index  int
	amount int64
}
