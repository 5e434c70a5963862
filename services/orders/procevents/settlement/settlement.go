// Package settlement decides what a processor notification does to a
// payment and its order: a pure function of the order as the store read
// and locked it. The store writes what Decide says, so the rule is tested
// by table without a database.
package settlement

import "github.com/almoner/almoner/services/orders/store"

// Kind is what a processor notification says happened to a charge.
type Kind int

const (
	// Succeeded means the charge succeeded.
	Succeeded Kind = iota + 1
	// Failed means the charge failed or was cancelled.
	Failed
	// Refunded means the processor has refunded some amount in all.
	Refunded
	// Disputed means the donor's bank disputes the charge.
	Disputed
)

// Schedule says what an installment order's schedule learns.
type Schedule int

const (
	// Unchanged means nothing (or the order is no installment's).
	Unchanged Schedule = iota
	// InstallmentSettled means the installment went through; its schedule's
	// declines are forgotten.
	InstallmentSettled
	// InstallmentFailed means the installment counts as a declined attempt.
	InstallmentFailed
)

// Effect is what a notification does. The zero Effect changes nothing:
// the event is already reflected.
type Effect struct {
	// Payment is the payment's new status ("" leaves it).
	Payment string
	// Order is the order's new status ("" leaves it).
	Order string
	// RefundMinor is an amount refunded at the processor (its dashboard)
	// to record as a refund of the payment, never made again.
	RefundMinor int64
	// Schedule is what the order's schedule learns.
	Schedule Schedule
	// ReleaseStock: the order fails and has item lines whose stock goes
	// back (a refund's release depends on the order it leaves).
	ReleaseStock bool
}

// Decide is the effect of a notification of kind on payment idx of o.
// refundedMinor is, for Refunded, the charge's total refunded at the
// processor. Each kind leaves the order as it is when the event is
// already reflected.
func Decide(o store.Order, idx int, kind Kind, refundedMinor int64) Effect {
	p := o.Payments[idx]
	switch kind {
	case Succeeded:
		return succeeded(o, idx)
	case Failed:
		if !unsettled(p) {
			return Effect{}
		}
		if o.Status != store.StatusPending {
			return Effect{Payment: store.PaymentFailed}
		}
		return Effect{Payment: store.PaymentFailed, Order: store.StatusFailed, Schedule: InstallmentFailed, ReleaseStock: len(o.Items) > 0}
	case Refunded:
		delta := refundedMinor - p.RefundedMinor
		if delta <= 0 || !store.Refundable(p) || (o.Status != store.StatusCompleted && o.Status != store.StatusPartiallyRefunded) {
			return Effect{}
		}
		return Effect{RefundMinor: min(delta, p.AmountMinor-p.RefundedMinor)}
	case Disputed:
		if p.Status == store.PaymentDisputed {
			return Effect{}
		}
		return Effect{Payment: store.PaymentDisputed}
	}
	return Effect{}
}

// succeeded captures an unsettled payment; the order completes once none
// of its payments is unsettled, and an installment's order then clears its
// schedule's declines.
func succeeded(o store.Order, idx int) Effect {
	if !unsettled(o.Payments[idx]) {
		return Effect{}
	}
	e := Effect{Payment: store.PaymentCaptured}
	if o.Status != store.StatusPending {
		return e
	}
	for i, p := range o.Payments {
		if i != idx && unsettled(p) {
			return e
		}
	}
	e.Order, e.Schedule = store.StatusCompleted, InstallmentSettled
	return e
}

func unsettled(p store.Payment) bool {
	return p.Status == store.PaymentPending || p.Status == store.PaymentRequiresAction
}
