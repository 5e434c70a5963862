package eventstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
)

// Settlement is what a processor notification does to a payment.
type Settlement int

const (
	// SettleSucceeded: the charge succeeded.
	SettleSucceeded Settlement = iota + 1
	// SettleFailed: the charge failed or was cancelled.
	SettleFailed
	// SettleRefunded: the processor has refunded RefundedMinor in all.
	SettleRefunded
	// SettleDisputed: the donor's bank disputes the charge.
	SettleDisputed
)

// Notification is a verified processor event for one charge.
type Notification struct {
	Provider  string
	EventID   string
	EventType string
	Reference string
	Settle    Settlement
	// RefundedMinor is, for SettleRefunded, the charge's total refunded
	// at the processor.
	RefundedMinor int64
	// Reason is the processor's reason for a failure, kept in the log of
	// changes and on a failed installment.
	Reason string
	// On is the day the notification is applied: a failed installment's
	// retry days count from it.
	On time.Time
}

// Applied says what a notification did.
type Applied struct {
	// Duplicate: the event was applied before; nothing changed.
	Duplicate bool
	// Unknown: no payment of the tenant has the event's charge.
	Unknown bool
	// Order is the order after the change (zero when none).
	Order store.Order
	// Changed is false when the order was already where the event says.
	Changed bool
	// ReleaseStock: the order stopped standing (Failed or fully refunded)
	// and has item lines whose stock goes back.
	ReleaseStock bool
}

// ErrUnknownCharge means no payment of the tenant has the charge.
var errUnknownCharge = errors.New("unknown charge")

// ApplyNotification applies a processor event exactly once: the event id
// is recorded in the same transaction as its effect, so a redelivered
// event changes nothing. An event for a charge the tenant does not have
// leaves no trace (it may belong to another system on the same account).
func (s *Store) ApplyNotification(ctx context.Context, tenantID uuid.UUID, n Notification, actor string) (Applied, error) {
	var out Applied
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO orders.processor_events (tenant_id, provider, event_id, event_type) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, tenantID, n.Provider, n.EventID, n.EventType)
		if err != nil {
			return fmt.Errorf("record processor event: %w", err)
		}
		if tag.RowsAffected() == 0 {
			out.Duplicate = true
			return nil
		}
		var orderID, paymentID uuid.UUID
		err = tx.QueryRow(ctx, `SELECT order_id, id FROM orders.order_payments
			WHERE tenant_id = $1 AND processor_reference = $2 AND processor = $3`, tenantID, n.Reference, n.Provider).Scan(&orderID, &paymentID)
		if db.IsNoRows(err) {
			return errUnknownCharge
		}
		if err != nil {
			return fmt.Errorf("find payment by processor reference: %w", err)
		}
		o, err := store.LockOrder(ctx, tx, tenantID, orderID)
		if err != nil {
			return err
		}
		// A refund or void in flight may be what the event reports: it is
		// applied once that change is recorded (the processor sends it
		// again), not counted twice.
		if err := changestore.NoChangeInFlight(ctx, tx, o); err != nil {
			return err
		}
		out, err = settle(ctx, tx, o, paymentID, n, actor)
		return err
	})
	if errors.Is(err, errUnknownCharge) {
		return Applied{Unknown: true}, nil
	}
	if err != nil {
		return Applied{}, fmt.Errorf("orders: apply processor event %s: %w", n.EventID, err)
	}
	return out, nil
}

// settle applies one notification to a locked order: each settlement is a
// step of its own, and each leaves the order as it is when the event is
// already reflected (Changed false).
func settle(ctx context.Context, tx pgx.Tx, o store.Order, paymentID uuid.UUID, n Notification, actor string) (Applied, error) {
	idx := -1
	for i, p := range o.Payments {
		if p.ID == paymentID {
			idx = i
		}
	}
	if idx < 0 {
		return Applied{}, fmt.Errorf("payment %s not on its order %s", paymentID, o.ID)
	}
	switch n.Settle {
	case SettleSucceeded:
		return settleSucceeded(ctx, tx, o, idx, actor)
	case SettleFailed:
		return settleFailed(ctx, tx, o, idx, n, actor)
	case SettleRefunded:
		return settleRefunded(ctx, tx, o, idx, n.RefundedMinor, actor)
	case SettleDisputed:
		return settleDisputed(ctx, tx, o, idx, actor)
	}
	return Applied{Order: o}, nil
}

func unsettled(p store.Payment) bool {
	return p.Status == store.PaymentPending || p.Status == store.PaymentRequiresAction
}

// settleSucceeded captures an unsettled payment; the order completes once
// none of its payments is unsettled, and an installment's order then
// clears its schedule's declines (installmentSettled).
func settleSucceeded(ctx context.Context, tx pgx.Tx, o store.Order, idx int, actor string) (Applied, error) {
	p := o.Payments[idx]
	if !unsettled(p) {
		return Applied{Order: o}, nil
	}
	if err := store.SetPaymentStatus(ctx, tx, o.TenantID, o.ID, p, store.PaymentCaptured, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = store.PaymentCaptured
	if o.Status == store.StatusPending && !anyUnsettled(o.Payments) {
		if err := store.SetOrderStatus(ctx, tx, &o, store.StatusCompleted, audit.Updated, actor); err != nil {
			return Applied{}, err
		}
		if err := recurringstore.InstallmentSettled(ctx, tx, o); err != nil {
			return Applied{}, err
		}
	}
	return Applied{Order: o, Changed: true}, nil
}

// settleFailed fails an unsettled payment and its Pending order, whose
// stock then goes back; an installment's order counts as a declined
// attempt of its schedule (recurringstore.FailInstallment).
func settleFailed(ctx context.Context, tx pgx.Tx, o store.Order, idx int, n Notification, actor string) (Applied, error) {
	p := o.Payments[idx]
	if !unsettled(p) {
		return Applied{Order: o}, nil
	}
	if err := store.SetPaymentStatus(ctx, tx, o.TenantID, o.ID, p, store.PaymentFailed, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = store.PaymentFailed
	out := Applied{Order: o, Changed: true}
	if o.Status == store.StatusPending {
		if err := store.SetOrderStatus(ctx, tx, &o, store.StatusFailed, audit.Updated, actor); err != nil {
			return Applied{}, err
		}
		on := n.On
		if on.IsZero() {
			on = time.Now()
		}
		if err := recurringstore.FailInstallment(ctx, tx, o, cmp.Or(n.Reason, "payment_failed"), store.Day(on)); err != nil {
			return Applied{}, err
		}
		out.Order, out.ReleaseStock = o, len(o.Items) > 0
	}
	return out, nil
}

// settleRefunded records a refund made at the processor (its dashboard):
// the processor's cumulative refunded amount beyond what the payment has
// recorded, never made again.
func settleRefunded(ctx context.Context, tx pgx.Tx, o store.Order, idx int, refundedMinor int64, actor string) (Applied, error) {
	p := o.Payments[idx]
	delta := refundedMinor - p.RefundedMinor
	if delta <= 0 || !store.Refundable(p) || (o.Status != store.StatusCompleted && o.Status != store.StatusPartiallyRefunded) {
		return Applied{Order: o}, nil
	}
	ro, err := changestore.RefundLocked(ctx, tx, o, idx, min(delta, p.AmountMinor-p.RefundedMinor),
		changestore.Refund{Reason: "Refunded at the payment processor.", Source: "processor"}, actor)
	if err != nil {
		return Applied{}, err
	}
	return Applied{Order: ro, Changed: true, ReleaseStock: ro.Status == store.StatusRefunded && len(ro.Items) > 0}, nil
}

// settleDisputed marks a payment the donor's bank disputes.
func settleDisputed(ctx context.Context, tx pgx.Tx, o store.Order, idx int, actor string) (Applied, error) {
	p := o.Payments[idx]
	if p.Status == store.PaymentDisputed {
		return Applied{Order: o}, nil
	}
	if err := store.SetPaymentStatus(ctx, tx, o.TenantID, o.ID, p, store.PaymentDisputed, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = store.PaymentDisputed
	return Applied{Order: o, Changed: true}, nil
}

func anyUnsettled(ps []store.Payment) bool {
	for _, p := range ps {
		if unsettled(p) {
			return true
		}
	}
	return false
}
