package changes

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
)

// A 60.00 order paid 40.00 by card (10.00 refunded already) and 20.00 in
// cash, in that order.
var (
	card  = store.Payment{ID: uuid.MustParse("00000000-0000-0000-0000-00000000000a"), Method: "Card", AmountMinor: 4000, RefundedMinor: 1000, Status: store.PaymentPartiallyRefunded}
	cash  = store.Payment{ID: uuid.MustParse("00000000-0000-0000-0000-00000000000b"), Method: "Cash", AmountMinor: 2000, Status: store.PaymentCaptured}
	order = store.Order{Status: store.StatusPartiallyRefunded, TotalMinor: 6000, RefundedMinor: 1000, Payments: []store.Payment{card, cash}}
	id    = uuid.MustParse("00000000-0000-0000-0000-0000000000c0")
)

func take(p store.Payment, amount int64) changestore.PaymentTake {
	return changestore.PaymentTake{PaymentID: p.ID, Amount: amount, Key: id.String() + "/" + p.ID.String()}
}

// TestRefundPlan: a refund is taken from the payment named, or from the
// payments in order, counting the refunds in flight as refunded.
func TestRefundPlan(t *testing.T) {
	inFlight := []changestore.PaymentChange{{Kind: changestore.ChangeRefund, Takes: []changestore.PaymentTake{{PaymentID: card.ID, Amount: 2500}}}}
	voiding := []changestore.PaymentChange{{Kind: changestore.ChangeVoid}}
	completed := order
	completed.Status = store.StatusRefunded
	for _, tc := range []struct {
		name     string
		o        store.Order
		inFlight []changestore.PaymentChange
		r        changestore.Refund
		want     []changestore.PaymentTake
		err      error
	}{
		{"all that is left, in order", order, nil, changestore.Refund{}, []changestore.PaymentTake{take(card, 3000), take(cash, 2000)}, nil},
		{"part, from the first payment", order, nil, changestore.Refund{AmountMinor: 500}, []changestore.PaymentTake{take(card, 500)}, nil},
		{"across two payments", order, nil, changestore.Refund{AmountMinor: 3500}, []changestore.PaymentTake{take(card, 3000), take(cash, 500)}, nil},
		{"more than is left", order, nil, changestore.Refund{AmountMinor: 5001}, nil, store.ErrOverRefund},
		{"the payment named", order, nil, changestore.Refund{AmountMinor: 1500, PaymentID: &cash.ID}, []changestore.PaymentTake{take(cash, 1500)}, nil},
		{"more than the payment named has", order, nil, changestore.Refund{AmountMinor: 3001, PaymentID: &card.ID}, nil, store.ErrOverRefund},
		{"a payment not of the order", order, nil, changestore.Refund{PaymentID: &id}, nil, db.ErrNotFound},
		{"a refund in flight counts", order, inFlight, changestore.Refund{}, []changestore.PaymentTake{take(card, 500), take(cash, 2000)}, nil},
		{"past what the one in flight leaves", order, inFlight, changestore.Refund{AmountMinor: 2600}, nil, store.ErrOverRefund},
		{"a void in flight", order, voiding, changestore.Refund{AmountMinor: 100}, nil, store.ErrChangeInProgress},
		{"a refunded order", completed, nil, changestore.Refund{}, nil, store.ErrIllegalState},
	} {
		got, err := refundPlan(tc.r)(tc.o, tc.inFlight, id)
		if !errors.Is(err, tc.err) || (tc.err == nil && !slices.Equal(got, tc.want)) {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestVoidPlan: a void refunds what a captured payment has left and
// cancels one not settled; an order refunded from, voided or with a
// change in flight is refused.
func TestVoidPlan(t *testing.T) {
	pending := store.Payment{ID: uuid.New(), Method: "Ach", AmountMinor: 3000, Status: store.PaymentPending}
	failed := store.Payment{ID: uuid.New(), Method: "Card", AmountMinor: 3000, Status: store.PaymentFailed}
	captured := store.Order{Status: store.StatusCompleted, TotalMinor: 2000, Payments: []store.Payment{cash, failed}}
	processing := store.Order{Status: store.StatusPending, TotalMinor: 3000, Payments: []store.Payment{pending}}
	voided := store.Order{Status: store.StatusVoided}
	for _, tc := range []struct {
		name     string
		o        store.Order
		inFlight []changestore.PaymentChange
		want     []changestore.PaymentTake
		err      error
	}{
		{"captured: refunded, a failed payment left", captured, nil, []changestore.PaymentTake{{PaymentID: cash.ID, Amount: 2000, Key: "void/" + cash.ID.String()}}, nil},
		{"not settled: cancelled", processing, nil, []changestore.PaymentTake{{PaymentID: pending.ID, Cancel: true, Key: "void/" + pending.ID.String()}}, nil},
		{"refunded from", order, nil, nil, store.ErrIllegalState},
		{"voided", voided, nil, nil, store.ErrAlreadyVoided},
		{"a refund in flight", captured, []changestore.PaymentChange{{Kind: changestore.ChangeRefund}}, nil, store.ErrChangeInProgress},
	} {
		got, err := voidPlan(tc.o, tc.inFlight, id)
		if !errors.Is(err, tc.err) || (tc.err == nil && !slices.Equal(got, tc.want)) {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}
