package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// PaymentAction is called inside a void or refund transaction for each
// payment it touches (amount is the refund, 0 for a void), so a processor
// payment is voided or refunded at the processor before the change
// commits; an error rolls everything back.
type PaymentAction func(ctx context.Context, p Payment, amountMinor int64) error

func lockOrder(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (Order, error) {
	o, err := scanOrder(tx.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders.orders WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
	if db.IsNoRows(err) {
		return Order{}, ErrNotFound
	}
	if err != nil {
		return Order{}, err
	}
	os := []Order{o}
	if err := loadLines(ctx, tx, tenantID, os); err != nil {
		return Order{}, err
	}
	return os[0], nil
}

// VoidOrder voids an order that nothing was refunded from: its payments
// become Voided and the order Voided. Voiding is the soft delete of an
// order, so its audit row is order.deleted.
func (s *Store) VoidOrder(ctx context.Context, tenantID, id uuid.UUID, act PaymentAction, actor string) (Order, error) {
	var out Order
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := lockOrder(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		switch o.Status {
		case StatusVoided:
			return ErrAlreadyVoided
		case StatusCompleted:
		default:
			return ErrIllegalState
		}
		tenant := tenantID.String()
		for i, p := range o.Payments {
			if p.Status != PaymentCaptured && p.Status != PaymentAuthorized {
				continue
			}
			if err := act(ctx, p, 0); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE orders.order_payments SET status = 'Voided' WHERE tenant_id = $1 AND order_id = $2 AND id = $3`, tenantID, id, p.ID); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityOrderPayment, EntityID: p.ID.String(), Action: audit.Updated,
				Changes: map[string]audit.Change{"paymentStatus": {Old: p.Status, New: PaymentVoided}}, Actor: actor}); err != nil {
				return err
			}
			o.Payments[i].Status = PaymentVoided
		}
		if err := tx.QueryRow(ctx, `UPDATE orders.orders SET status = 'Voided', updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING updated_at`,
			tenantID, id).Scan(&o.UpdatedAt); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityOrder, EntityID: id.String(), Action: audit.Deleted, Actor: actor}); err != nil {
			return err
		}
		o.Status = StatusVoided
		out = o
		return nil
	})
	return out, err
}

// RefundOrder refunds amountMinor of an order (0 means all that is left),
// taking it from the payments in order. Over-refunding is ErrOverRefund;
// a voided or fully refunded order is ErrIllegalState.
func (s *Store) RefundOrder(ctx context.Context, tenantID, id uuid.UUID, amountMinor int64, reason string, act PaymentAction, actor string) (Order, error) {
	var out Order
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := lockOrder(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if o.Status != StatusCompleted && o.Status != StatusPartiallyRefunded {
			return ErrIllegalState
		}
		left := o.TotalMinor - o.RefundedMinor
		if amountMinor == 0 {
			amountMinor = left
		}
		if amountMinor > left {
			return ErrOverRefund
		}
		if amountMinor <= 0 {
			return ErrNothingToApply
		}
		tenant := tenantID.String()
		rest := amountMinor
		for i, p := range o.Payments {
			avail := p.AmountMinor - p.RefundedMinor
			if rest == 0 || avail <= 0 || (p.Status != PaymentCaptured && p.Status != PaymentPartiallyRefunded) {
				continue
			}
			take := min(avail, rest)
			rest -= take
			if err := act(ctx, p, take); err != nil {
				return err
			}
			np := p
			np.RefundedMinor += take
			np.Status = PaymentPartiallyRefunded
			if np.RefundedMinor == np.AmountMinor {
				np.Status = PaymentRefunded
			}
			if _, err := tx.Exec(ctx, `UPDATE orders.order_payments SET refunded_minor = $4, status = $5 WHERE tenant_id = $1 AND order_id = $2 AND id = $3`,
				tenantID, id, p.ID, np.RefundedMinor, np.Status); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityOrderPayment, EntityID: p.ID.String(), Action: audit.Updated,
				Changes: map[string]audit.Change{"paymentStatus": {Old: p.Status, New: np.Status}, "refundedAmountMinor": {Old: p.RefundedMinor, New: np.RefundedMinor}}, Actor: actor}); err != nil {
				return err
			}
			o.Payments[i] = np
		}
		if rest != 0 {
			// Payments cover the total by construction; a leftover means the
			// rows disagree with the order, which must not be papered over.
			return ErrOverRefund
		}
		newStatus := StatusPartiallyRefunded
		if o.RefundedMinor+amountMinor == o.TotalMinor {
			newStatus = StatusRefunded
		}
		if _, err := tx.Exec(ctx, `INSERT INTO orders.refunds (tenant_id, order_id, id, amount_minor, reason, actor) VALUES ($1, $2, $3, $4, $5, $6)`,
			tenantID, id, uuid.Must(uuid.NewV7()), amountMinor, reason, actor); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE orders.orders SET status = $3, refunded_minor = refunded_minor + $4, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING updated_at`, tenantID, id, newStatus, amountMinor).Scan(&o.UpdatedAt); err != nil {
			return err
		}
		// Reports read each line's share of the refunds; it is stored here,
		// under the order's lock, so the report views stay plain joins.
		if _, err := tx.Exec(ctx, `SELECT orders.apportion_refund($1, $2)`, tenantID, id); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityOrder, EntityID: id.String(), Action: audit.Updated,
			Changes: map[string]audit.Change{"orderStatus": {Old: o.Status, New: newStatus}, "refundedAmountMinor": {Old: o.RefundedMinor, New: o.RefundedMinor + amountMinor}}, Actor: actor}); err != nil {
			return err
		}
		o.Status, o.RefundedMinor = newStatus, o.RefundedMinor+amountMinor
		out = o
		return nil
	})
	return out, err
}
