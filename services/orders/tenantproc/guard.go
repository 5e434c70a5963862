package tenantproc

import (
	"context"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/processor"
)

// Guard wraps src so that every processor it hands out (and its own
// lookups) refuse a call made inside a database transaction.
//
// guardedSource and guardedProcessor refuse every processor call (and the
// auth service's lookup of a tenant's processor) made inside a database
// transaction when the process tracks transactions (db.OutsideTx): tests
// run the service through them, so a call that would hold row locks and
// a pooled connection across the network fails the suite. In production
// each check is one atomic load.
func Guard(src Source) Source { return guardedSource{src} }

type guardedSource struct{ src Source }

func (g guardedSource) ForTenant(ctx context.Context, tenantID string) (Account, bool, error) {
	if err := db.OutsideTx(); err != nil {
		return Account{}, false, err
	}
	tp, ok, err := g.src.ForTenant(ctx, tenantID)
	if tp.Processor != nil {
		tp.Processor = guardedProcessor{tp.Processor}
	}
	return tp, ok, err
}

func (g guardedSource) ForNotification(ctx context.Context, provider, slug string) (NotificationTarget, bool, error) {
	if err := db.OutsideTx(); err != nil {
		return NotificationTarget{}, false, err
	}
	return g.src.ForNotification(ctx, provider, slug)
}

type guardedProcessor struct{ p processor.Processor }

func (g guardedProcessor) Charge(ctx context.Context, r processor.ChargeRequest) (processor.ChargeResult, error) {
	if err := db.OutsideTx(); err != nil {
		return processor.ChargeResult{}, err
	}
	return g.p.Charge(ctx, r)
}

func (g guardedProcessor) Cancel(ctx context.Context, reference, idempotencyKey string) error {
	if err := db.OutsideTx(); err != nil {
		return err
	}
	return g.p.Cancel(ctx, reference, idempotencyKey)
}

func (g guardedProcessor) Refund(ctx context.Context, r processor.RefundRequest) (processor.Refund, error) {
	if err := db.OutsideTx(); err != nil {
		return processor.Refund{}, err
	}
	return g.p.Refund(ctx, r)
}

func (g guardedProcessor) CreateCustomer(ctx context.Context, r processor.CustomerRequest) (string, error) {
	if err := db.OutsideTx(); err != nil {
		return "", err
	}
	return g.p.CreateCustomer(ctx, r)
}

func (g guardedProcessor) AttachPaymentMethod(ctx context.Context, paymentMethodID, customerID, idempotencyKey string) (processor.PaymentMethod, error) {
	if err := db.OutsideTx(); err != nil {
		return processor.PaymentMethod{}, err
	}
	return g.p.AttachPaymentMethod(ctx, paymentMethodID, customerID, idempotencyKey)
}

func (g guardedProcessor) DetachPaymentMethod(ctx context.Context, paymentMethodID string) error {
	if err := db.OutsideTx(); err != nil {
		return err
	}
	return g.p.DetachPaymentMethod(ctx, paymentMethodID)
}

func (g guardedProcessor) FindCharges(ctx context.Context, tenantID, orderID string) ([]processor.FoundCharge, error) {
	if err := db.OutsideTx(); err != nil {
		return nil, err
	}
	return g.p.FindCharges(ctx, tenantID, orderID)
}
