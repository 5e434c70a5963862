package refund

import (
	"testing"

	"github.com/almoner/almoner/services/orders/store"
)

func TestPayment(t *testing.T) {
	cases := []struct {
		name       string
		status     string
		amount     int64
		refunded   int64
		take       int64
		wantStatus string
		wantMinor  int64
	}{
		{"part of a captured payment", store.PaymentCaptured, 1000, 0, 400, store.PaymentPartiallyRefunded, 400},
		{"the rest of a partly refunded one", store.PaymentPartiallyRefunded, 1000, 400, 600, store.PaymentRefunded, 1000},
		{"all at once", store.PaymentCaptured, 1000, 0, 1000, store.PaymentRefunded, 1000},
		{"a disputed payment stays disputed", store.PaymentDisputed, 1000, 0, 1000, store.PaymentDisputed, 1000},
	}
	for _, c := range cases {
		got := Payment(store.Payment{Status: c.status, AmountMinor: c.amount, RefundedMinor: c.refunded}, c.take)
		if got.Status != c.wantStatus || got.RefundedMinor != c.wantMinor || got.AmountMinor != c.amount {
			t.Errorf("%s: %s %d", c.name, got.Status, got.RefundedMinor)
		}
	}
}

func TestOrderStatus(t *testing.T) {
	cases := []struct {
		name            string
		total, refunded int64
		more            int64
		want            string
	}{
		{"part", 1000, 0, 300, store.StatusPartiallyRefunded},
		{"the rest", 1000, 300, 700, store.StatusRefunded},
		{"all", 1000, 0, 1000, store.StatusRefunded},
	}
	for _, c := range cases {
		if got := OrderStatus(store.Order{TotalMinor: c.total, RefundedMinor: c.refunded}, c.more); got != c.want {
			t.Errorf("%s: %s", c.name, got)
		}
	}
}
