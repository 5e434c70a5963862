package orders

import (
	"context"
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/wire"
)

// closeBatchOnCharge charges, then closes the order's batch before the
// order is written: the race the batch check before charging cannot
// close.
type closeBatchOnCharge struct {
	processor.Processor
	close func()
}

func (p *closeBatchOnCharge) Charge(ctx context.Context, r processor.ChargeRequest) (processor.ChargeResult, error) {
	res, err := p.Processor.Charge(ctx, r)
	p.close()
	return res, err
}

// TestBatchClosingAfterChargeUndoes: a named batch is checked before the
// stock and the charge, and again when the order is written; a batch that
// closes in between still refuses the order (400 Order.BatchClosed), and
// the charge is undone: refunded once money moved, cancelled when it
// waits for 3-D Secure.
func TestBatchClosingAfterChargeUndoes(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	inner := f.proc.Processor
	for _, tc := range []struct {
		token, amount string
		minor         int64
		refunded      int64
		status        string
	}{
		{"pm_card_visa", "41.00", 4100, 4100, ""},
		{"pm_card_authenticationRequired", "42.00", 4200, 0, "canceled"},
	} {
		b, err := f.svc.store.CreateBatch(f.ctx, f.tenant, "Gala "+tc.token, "", "test")
		if err != nil {
			t.Fatal(err)
		}
		f.proc.Processor = &closeBatchOnCharge{Processor: inner, close: func() {
			if _, err := f.svc.store.CloseBatch(context.Background(), f.tenant, b.ID, "test"); err != nil {
				t.Error(err)
			}
		}}
		req := f.order("", tc.amount, pay("Card", tc.token, tc.amount))
		req.BatchId = b.ID.String()
		_, err = f.srv.CreateOrder(f.ctx, req)
		if e, ok := apperr.As(err); !ok || e.Kind != apperr.KindInvalid || e.Code != wire.CodeBatchClosed {
			t.Errorf("%s: err %v, want 400 %s", tc.token, err, wire.CodeBatchClosed)
		}
		var found bool
		for _, pi := range f.fake.PaymentIntents() {
			if pi.Amount != tc.minor {
				continue
			}
			found = true
			if pi.AmountRefunded != tc.refunded || (tc.status != "" && pi.Status != tc.status) {
				t.Errorf("%s: charge of the refused order %+v, want refunded %d, status %q", tc.token, pi, tc.refunded, tc.status)
			}
		}
		if !found {
			t.Errorf("%s: no charge made; the batch closed after it was checked, so the order was charged", tc.token)
		}
	}
}
