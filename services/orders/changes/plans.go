package changes

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
)

// The rules of a change, pure functions of the order as locked and the
// changes in flight on it; the store reads, locks and writes
// (store.BeginChange).

// refundPlan plans a refund of r: a Completed or PartiallyRefunded order,
// the refunds in flight counted as refunded (refunds made at once never
// give back more than was paid), split over its payments, each call keyed
// <changeId>/<paymentId>. A void in flight is store.ErrChangeInProgress;
// over-refunding store.ErrOverRefund; a payment id not of the order
// db.ErrNotFound.
func refundPlan(r changestore.Refund) changestore.PlanFunc {
	return func(o store.Order, inFlight []changestore.PaymentChange, changeID uuid.UUID) ([]changestore.PaymentTake, error) {
		if o.Status != store.StatusCompleted && o.Status != store.StatusPartiallyRefunded {
			return nil, fmt.Errorf("order is %s: %w", o.Status, store.ErrIllegalState)
		}
		o, err := reserved(o, inFlight)
		if err != nil {
			return nil, err
		}
		takes, err := splitRefund(o, r)
		if err != nil {
			return nil, fmt.Errorf("plan refund: %w", err)
		}
		for i := range takes {
			takes[i].Key = changeID.String() + "/" + takes[i].PaymentID.String()
		}
		return takes, nil
	}
}

// voidPlan plans the void of an order that nothing was refunded from: a
// Completed order, or a Pending one whose charge has not settled. Each
// payment still standing is voided: a captured one refunded of what is
// left, one not settled cancelled, each keyed void/<paymentId>. Any
// change in flight is store.ErrChangeInProgress.
func voidPlan(o store.Order, inFlight []changestore.PaymentChange, _ uuid.UUID) ([]changestore.PaymentTake, error) {
	switch o.Status {
	case store.StatusVoided:
		return nil, store.ErrAlreadyVoided
	case store.StatusCompleted, store.StatusPending:
	default:
		return nil, fmt.Errorf("order is %s: %w", o.Status, store.ErrIllegalState)
	}
	if len(inFlight) > 0 {
		return nil, store.ErrChangeInProgress
	}
	var takes []changestore.PaymentTake
	for _, p := range o.Payments {
		switch p.Status {
		case store.PaymentCaptured:
			takes = append(takes, changestore.PaymentTake{PaymentID: p.ID, Amount: p.AmountMinor - p.RefundedMinor, Key: "void/" + p.ID.String()})
		case store.PaymentAuthorized, store.PaymentPending, store.PaymentRequiresAction:
			takes = append(takes, changestore.PaymentTake{PaymentID: p.ID, Cancel: true, Key: "void/" + p.ID.String()})
		}
	}
	return takes, nil
}

// reserved is o with the refunds in flight counted as refunded; a void
// in flight is store.ErrChangeInProgress.
func reserved(o store.Order, inFlight []changestore.PaymentChange) (store.Order, error) {
	o.Payments = append([]store.Payment(nil), o.Payments...)
	for _, c := range inFlight {
		if c.Kind == changestore.ChangeVoid {
			return store.Order{}, store.ErrChangeInProgress
		}
		for _, t := range c.Takes {
			for i := range o.Payments {
				if o.Payments[i].ID == t.PaymentID {
					o.Payments[i].RefundedMinor += t.Amount
					o.RefundedMinor += t.Amount
				}
			}
		}
	}
	return o, nil
}

// splitRefund splits a refund over o's payments: from the one named, or
// from each in order until the amount is covered.
func splitRefund(o store.Order, r changestore.Refund) ([]changestore.PaymentTake, error) {
	if r.PaymentID != nil {
		for _, p := range o.Payments {
			if p.ID != *r.PaymentID {
				continue
			}
			left := p.AmountMinor - p.RefundedMinor
			amt := r.AmountMinor
			if amt == 0 {
				amt = left
			}
			switch {
			case !store.Refundable(p) || amt > left:
				return nil, store.ErrOverRefund
			case amt <= 0:
				return nil, store.ErrNothingToApply
			}
			return []changestore.PaymentTake{{PaymentID: p.ID, Amount: amt}}, nil
		}
		return nil, fmt.Errorf("payment %s: %w", *r.PaymentID, db.ErrNotFound)
	}
	left := o.TotalMinor - o.RefundedMinor
	amt := r.AmountMinor
	if amt == 0 {
		amt = left
	}
	if amt > left {
		return nil, store.ErrOverRefund
	}
	if amt <= 0 {
		return nil, store.ErrNothingToApply
	}
	var plan []changestore.PaymentTake
	rest := amt
	for _, p := range o.Payments {
		if rest == 0 {
			break
		}
		if !store.Refundable(p) {
			continue
		}
		take := min(p.AmountMinor-p.RefundedMinor, rest)
		rest -= take
		plan = append(plan, changestore.PaymentTake{PaymentID: p.ID, Amount: take})
	}
	if rest != 0 {
		// Payments cover the total by construction; a leftover means the
		// rows disagree with the order, which must not be papered over.
		return nil, store.ErrOverRefund
	}
	return plan, nil
}
