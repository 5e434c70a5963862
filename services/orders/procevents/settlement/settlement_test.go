package settlement

import (
	"testing"

	"github.com/almoner/almoner/services/orders/store"
)

func order(status string, items int, payments ...store.Payment) store.Order {
	return store.Order{Status: status, Payments: payments, Items: make([]store.Item, items)}
}

func pay(status string, amount, refunded int64) store.Payment {
	return store.Payment{Status: status, AmountMinor: amount, RefundedMinor: refunded}
}

func TestDecide(t *testing.T) {
	pending, captured := pay(store.PaymentPending, 1000, 0), pay(store.PaymentCaptured, 1000, 0)
	cases := []struct {
		name     string
		o        store.Order
		kind     Kind
		refunded int64
		want     Effect
	}{
		{"success completes a pending order", order(store.StatusPending, 0, pending), Succeeded, 0,
			Effect{Payment: store.PaymentCaptured, Order: store.StatusCompleted, Schedule: InstallmentSettled}},
		{"success waits for the other payments", order(store.StatusPending, 0, pending, pay(store.PaymentRequiresAction, 500, 0)), Succeeded, 0,
			Effect{Payment: store.PaymentCaptured}},
		{"success again changes nothing", order(store.StatusCompleted, 0, captured), Succeeded, 0, Effect{}},
		{"failure fails a pending order and its stock goes back", order(store.StatusPending, 2, pending), Failed, 0,
			Effect{Payment: store.PaymentFailed, Order: store.StatusFailed, Schedule: InstallmentFailed, ReleaseStock: true}},
		{"failure of a completed order's payment", order(store.StatusCompleted, 0, pay(store.PaymentRequiresAction, 1000, 0)), Failed, 0,
			Effect{Payment: store.PaymentFailed}},
		{"failure of a captured payment changes nothing", order(store.StatusCompleted, 0, captured), Failed, 0, Effect{}},
		{"refund at the processor beyond what is recorded", order(store.StatusPartiallyRefunded, 0, pay(store.PaymentPartiallyRefunded, 1000, 300)), Refunded, 700,
			Effect{RefundMinor: 400}},
		{"refund bounded by what is left", order(store.StatusCompleted, 0, captured), Refunded, 5000, Effect{RefundMinor: 1000}},
		{"refund already recorded", order(store.StatusCompleted, 0, pay(store.PaymentPartiallyRefunded, 1000, 300)), Refunded, 300, Effect{}},
		{"refund of a pending order waits", order(store.StatusPending, 0, pending), Refunded, 500, Effect{}},
		{"dispute", order(store.StatusCompleted, 0, captured), Disputed, 0, Effect{Payment: store.PaymentDisputed}},
		{"dispute again", order(store.StatusCompleted, 0, pay(store.PaymentDisputed, 1000, 0)), Disputed, 0, Effect{}},
		{"unknown kind", order(store.StatusCompleted, 0, captured), Kind(99), 0, Effect{}},
	}
	for _, c := range cases {
		if got := Decide(c.o, 0, c.kind, c.refunded); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
