package orders

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/orders/procevents"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
	"github.com/almoner/almoner/services/orders/store/eventstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// TestRefundUnknownOutcomeFinishedBySweeper: a refund whose answer from
// Stripe is lost is a 503 that keeps the change (its amount still counts
// as refunded: a second refund cannot take it again); the sweeper makes
// the call again with the same key, which Stripe replays, and records it
// once. The processor is called with no transaction open (the suite
// tracks transactions, main_test.go).
func TestRefundUnknownOutcomeFinishedBySweeper(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	created, err := f.srv.CreateOrder(f.ctx, f.order("", "40.00", pay("Card", "pm_card_visa", "40.00")))
	if err != nil {
		t.Fatal(err)
	}
	orderID := uuid.MustParse(created.GetOrder().GetId())
	pi := created.GetOrder().GetPayments()[0].GetProcessorReference()

	f.fake.LoseNextResponses(1)
	_, err = f.svc.changes.Refund(f.ctx, f.tenant, orderID, changestore.Refund{AmountMinor: 3000}, "test")
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable {
		t.Fatalf("refund whose answer was lost: %v, want unavailable", err)
	}
	// The 30.00 in flight is reserved: 10.00 is all that is left.
	if _, err := f.svc.changes.Refund(f.ctx, f.tenant, orderID, changestore.Refund{AmountMinor: 2000}, "test"); !errors.Is(err, store.ErrOverRefund) {
		t.Errorf("a refund past what the one in flight leaves: %v, want ErrOverRefund", err)
	}
	if n, err := f.svc.changes.Finish(f.ctx, time.Minute); err != nil || n != 1 {
		t.Fatalf("sweep: finished %d, %v; want 1", n, err)
	}
	o, err := f.svc.store.GetOrder(f.ctx, f.tenant, orderID)
	if err != nil {
		t.Fatal(err)
	}
	refunds := f.fake.Refunds(pi)
	if o.RefundedMinor != 3000 || o.Status != store.StatusPartiallyRefunded || len(refunds) != 1 || refunds[0].Amount != 3000 {
		t.Errorf("after the sweep: order refunded %d (%s), Stripe refunds %+v; want 3000 once", o.RefundedMinor, o.Status, refunds)
	}
	for _, r := range f.fake.Requests() {
		if r.Status >= http.StatusBadRequest {
			t.Errorf("Stripe answered %s %s with %d", r.Method, r.Path, r.Status)
		}
	}
	if n, err := f.svc.changes.Finish(f.ctx, time.Minute); err != nil || n != 0 {
		t.Errorf("a second sweep finished %d, %v; want nothing", n, err)
	}
}

// TestNotificationWaitsForChangeInFlight: Stripe's notice of a refund
// that is being made is not applied while the refund is in flight (it
// would count the refund twice); it is refused, so Stripe sends it
// again, and after the refund is recorded it changes nothing.
func TestNotificationWaitsForChangeInFlight(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	created, err := f.srv.CreateOrder(f.ctx, f.order("", "25.00", pay("Card", "pm_card_visa", "25.00")))
	if err != nil {
		t.Fatal(err)
	}
	orderID := uuid.MustParse(created.GetOrder().GetId())
	ref := created.GetOrder().GetPayments()[0].GetProcessorReference()
	paymentID := uuid.MustParse(created.GetOrder().GetPayments()[0].GetId())
	oneRefund := func(store.Order, []changestore.PaymentChange, uuid.UUID) ([]changestore.PaymentTake, error) {
		return []changestore.PaymentTake{{PaymentID: paymentID, Amount: 1000, Key: "in-flight"}}, nil
	}
	c, err := changestore.New(f.svc.store).BeginChange(f.ctx, f.tenant, orderID, changestore.ChangeRefund, "", time.Minute, "test", oneRefund)
	if err != nil {
		t.Fatal(err)
	}
	n := eventstore.Notification{Provider: tenantproc.ProviderStripe, EventID: "evt_refunded", EventType: "charge.refunded", Reference: ref,
		Settle: eventstore.SettleRefunded, RefundedMinor: 1000, On: time.Now()}
	if _, err := eventstore.New(f.svc.store).ApplyNotification(f.ctx, f.tenant, n, procevents.Actor); !errors.Is(err, store.ErrChangeInProgress) {
		t.Fatalf("notification during the refund: %v, want ErrChangeInProgress", err)
	}
	if _, err := changestore.New(f.svc.store).FinishChange(f.ctx, c, len(c.Takes)); err != nil {
		t.Fatal(err)
	}
	if a, err := eventstore.New(f.svc.store).ApplyNotification(f.ctx, f.tenant, n, procevents.Actor); err != nil || a.Changed {
		t.Errorf("the notification sent again: changed %v, %v; want nothing changed", a.Changed, err)
	}
	o, err := f.svc.store.GetOrder(f.ctx, f.tenant, orderID)
	if err != nil {
		t.Fatal(err)
	}
	if o.RefundedMinor != 1000 {
		t.Errorf("refunded %d, want 1000 (counted once)", o.RefundedMinor)
	}
}
