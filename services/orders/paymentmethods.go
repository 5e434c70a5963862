package orders

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/changes"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/store"
)

// paymentMethodServer serves /contacts/{contactId}/payment-methods.
type paymentMethodServer struct {
	ordersv1.UnimplementedPaymentMethodServiceServer
	s *Service
}

var errPaymentMethodNotFound = apperr.NotFound("Payment method")

// ListContactPaymentMethods lists a contact's saved methods; a contact
// that is not the tenant's is 404.
func (a *paymentMethodServer) ListContactPaymentMethods(ctx context.Context, req *ordersv1.ListContactPaymentMethodsRequest) (*ordersv1.ListContactPaymentMethodsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.PaymentMethodsManage)
	if err != nil {
		return nil, err
	}
	if err := a.s.requireContact(ctx, p, req.GetContactId()); err != nil {
		return nil, err
	}
	list, err := a.s.store.ListPaymentMethods(ctx, p.Tenant(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	out := &ordersv1.ListContactPaymentMethodsResponse{PaymentMethods: make([]*ordersv1.PaymentMethod, 0, len(list))}
	for _, m := range list {
		out.PaymentMethods = append(out.PaymentMethods, &ordersv1.PaymentMethod{Id: m.ID, Type: m.Type, Brand: m.Brand, Last4: m.Last4,
			ExpMonth: m.ExpMonth, ExpYear: m.ExpYear, IsDefault: m.IsDefault, CreatedAt: timestamppb.New(m.CreatedAt)})
	}
	return out, nil
}

// DeleteContactPaymentMethod detaches a saved method at the processor and
// marks it detached here; schedules that used it stop collecting (their
// next installment is refused and they turn past_due).
func (a *paymentMethodServer) DeleteContactPaymentMethod(ctx context.Context, req *ordersv1.DeleteContactPaymentMethodRequest) (*ordersv1.DeleteContactPaymentMethodResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.PaymentMethodsManage)
	if err != nil {
		return nil, err
	}
	if err := a.s.requireContact(ctx, p, req.GetContactId()); err != nil {
		return nil, err
	}
	tenant, id := p.Tenant(), strings.TrimSpace(req.GetPaymentMethodId())
	m, err := a.s.store.ContactMethod(ctx, tenant, req.GetContactId(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errPaymentMethodNotFound
	}
	if err != nil {
		return nil, err
	}
	// The processor lets go first, with no transaction open; the method
	// is marked detached only once it has.
	if err := a.s.detachAtProcessor(ctx, p.TenantID, m); err != nil {
		return nil, err
	}
	if err := a.s.store.MarkMethodDetached(ctx, tenant, req.GetContactId(), id, p.Actor()); err != nil {
		return nil, err
	}
	return &ordersv1.DeleteContactPaymentMethodResponse{}, nil
}

// detachAtProcessor detaches a saved method at the processor that keeps
// it; one the processor no longer has is detached already.
func (s *Service) detachAtProcessor(ctx context.Context, tenantID string, m store.PaymentMethod) error {
	proc, err := s.byName(ctx, tenantID, m.Provider)
	if err != nil {
		return err
	}
	err = proc.DetachPaymentMethod(ctx, m.ID)
	if r, ok := processor.AsRefused(err); ok && r.Code == "resource_missing" {
		return nil
	}
	if err != nil {
		return changes.ProcessorError(err, "the method was not detached.", "The payment processor cannot be reached; the method was not removed. Retry the request.")
	}
	return nil
}

// requireContact answers 404 for a contact that is not the tenant's.
func (s *Service) requireContact(ctx context.Context, p authctx.Principal, contactID int64) error {
	if contactID <= 0 {
		return apperr.NotFound("Contact")
	}
	c, err := s.cfg.Contacts.Check(ctx, p, contactID)
	if err != nil {
		return err
	}
	if !c.Exists {
		return apperr.NotFound("Contact")
	}
	return nil
}
