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
	"github.com/almoner/almoner/services/orders/procevents/settlement"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
)

// Settlement is what a processor notification does to a payment
// (package settlement decides its effect).
type Settlement = settlement.Kind

// The settlements.
const (
	SettleSucceeded = settlement.Succeeded
	SettleFailed    = settlement.Failed
	SettleRefunded  = settlement.Refunded
	SettleDisputed  = settlement.Disputed
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

// settle applies one notification to a locked order: settlement.Decide
// says what changes, and each change is written with its audit row.
func settle(ctx context.Context, tx pgx.Tx, o store.Order, paymentID uuid.UUID, n Notification, actor string) (Applied, error) {
	idx := store.PaymentIndex(o, paymentID)
	if idx < 0 {
		return Applied{}, fmt.Errorf("payment %s not on its order %s", paymentID, o.ID)
	}
	e := settlement.Decide(o, idx, n.Settle, n.RefundedMinor)
	switch {
	case e == settlement.Effect{}:
		return Applied{Order: o}, nil
	case e.RefundMinor > 0:
		ro, err := changestore.RefundLocked(ctx, tx, o, idx, e.RefundMinor,
			changestore.Refund{Reason: "Refunded at the payment processor.", Source: "processor"}, actor)
		if err != nil {
			return Applied{}, err
		}
		return Applied{Order: ro, Changed: true, ReleaseStock: ro.Status == store.StatusRefunded && len(ro.Items) > 0}, nil
	}
	if err := store.SetPaymentStatus(ctx, tx, o.TenantID, o.ID, o.Payments[idx], e.Payment, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = e.Payment
	if e.Order != "" {
		if err := store.SetOrderStatus(ctx, tx, &o, e.Order, audit.Updated, actor); err != nil {
			return Applied{}, err
		}
	}
	if err := settleSchedule(ctx, tx, o, e.Schedule, n); err != nil {
		return Applied{}, err
	}
	return Applied{Order: o, Changed: true, ReleaseStock: e.ReleaseStock}, nil
}

// settleSchedule tells an installment order's schedule what its
// installment did: went through, or failed after it was recorded (its
// retry days count from the day the notification is applied).
func settleSchedule(ctx context.Context, tx pgx.Tx, o store.Order, s settlement.Schedule, n Notification) error {
	switch s {
	case settlement.InstallmentSettled:
		return recurringstore.InstallmentSettled(ctx, tx, o)
	case settlement.InstallmentFailed:
		on := n.On
		if on.IsZero() {
			on = time.Now()
		}
		return recurringstore.FailInstallment(ctx, tx, o, cmp.Or(n.Reason, "payment_failed"), store.Day(on))
	}
	return nil
}
