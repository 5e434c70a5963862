package changes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
	"github.com/almoner/almoner/services/orders/tenantproc"
	"github.com/almoner/almoner/services/orders/wire"
)

// Server refunds and voids orders (POST …/orders/{id}/refunds and
// …/void) and finishes the changes left in flight.
type Server struct {
	store      *changestore.Store
	processors tenantproc.Source
	stock      peers.Stock
	lease      time.Duration
	logger     *slog.Logger
}

// New returns the changes' server: the processors that collected the
// payments are called with a claim held for lease, and the stock of an
// order that ends voided or refunded goes back to stock.
func New(st *store.Store, processors tenantproc.Source, stock peers.Stock, lease time.Duration, logger *slog.Logger) *Server {
	return &Server{store: changestore.New(st), processors: processors, stock: stock, lease: lease, logger: logger}
}

// VoidOrder voids an order: Completed → Voided, payments voided (at the
// processor too) and stock released.
func (a *Server) VoidOrder(ctx context.Context, req *ordersv1.VoidOrderRequest) (*ordersv1.VoidOrderResponse, error) {
	p, id, err := orderTarget(ctx, req.GetTenantId(), req.GetOrderId(), scopes.OrdersVoid)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	o, err := a.void(ctx, tenantID, id, p.Actor())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, wire.ErrOrderNotFound
	case errors.Is(err, store.ErrAlreadyVoided):
		// A void whose stock release failed is finished by trying again.
		if cur, gerr := a.store.GetOrder(ctx, tenantID, id); gerr == nil && len(cur.Items) > 0 {
			if rerr := a.releaseAll(ctx, p, id); rerr != nil {
				return nil, rerr
			}
		}
		return nil, apperr.Rule(wire.CodeAlreadyVoided, "The order is already voided.")
	case errors.Is(err, store.ErrIllegalState):
		return nil, apperr.Rule(wire.CodeCannotVoid, "Only a Completed or Pending order with nothing refunded can be voided; refund the rest instead.")
	case errors.Is(err, store.ErrChangeInProgress):
		return nil, errChangeInProgress
	case err != nil:
		return nil, err
	}
	if len(o.Items) > 0 {
		if err := a.releaseAll(ctx, p, id); err != nil {
			return nil, err
		}
	}
	return &ordersv1.VoidOrderResponse{Order: wire.ToOrder(o)}, nil
}

// CreateOrderRefund refunds part or all of an order, from the payment the
// request names or else from its payments in order. A full refund (the
// order reaches Refunded) releases its stock.
func (a *Server) CreateOrderRefund(ctx context.Context, req *ordersv1.CreateOrderRefundRequest) (*ordersv1.CreateOrderRefundResponse, error) {
	p, id, err := orderTarget(ctx, req.GetTenantId(), req.GetOrderId(), scopes.OrdersRefund)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	cur, err := a.store.GetOrder(ctx, tenantID, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, wire.ErrOrderNotFound
	}
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	var amt int64
	if req.GetAmount() != nil && req.GetAmount().GetValue() != "" {
		amt = wire.Amount(&v, "Amount", req.GetAmount(), cur.Currency)
	}
	reason := wire.Text(&v, "Reason", req.GetReason(), wire.MaxText, false)
	payment := refundedPayment(&v, cur, req.GetPaymentId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	r := changestore.Refund{AmountMinor: amt, Reason: reason}
	if payment != nil {
		r.PaymentID = &payment.ID
	}
	o, err := a.Refund(ctx, tenantID, id, r, p.Actor())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, wire.ErrOrderNotFound
	case errors.Is(err, store.ErrIllegalState):
		return nil, apperr.Rule(wire.CodeCannotRefund, "Only a Completed or PartiallyRefunded order can be refunded.")
	case errors.Is(err, store.ErrChangeInProgress):
		return nil, errChangeInProgress
	case errors.Is(err, store.ErrOverRefund) && payment != nil:
		return nil, apperr.FieldRule(wire.CodeOverRefund, "Amount",
			fmt.Sprintf("At most %s can still be refunded from this payment.", money.FormatMinor(payment.RefundableMinor(), cur.Currency)))
	case errors.Is(err, store.ErrOverRefund):
		return nil, apperr.FieldRule(wire.CodeOverRefund, "Amount",
			fmt.Sprintf("At most %s can still be refunded.", money.FormatMinor(cur.TotalMinor-cur.RefundedMinor, cur.Currency)))
	case err != nil:
		return nil, err
	}
	if o.Status == store.StatusRefunded && len(o.Items) > 0 {
		if err := a.releaseAll(ctx, p, id); err != nil {
			return nil, err
		}
	}
	return &ordersv1.CreateOrderRefundResponse{Order: wire.ToOrder(o)}, nil
}

// orderTarget checks the caller's scope on the tenant and reads the
// order id of the path; an id that is no UUID is the order's 404.
func orderTarget(ctx context.Context, tenantID, orderID, scope string) (authctx.Principal, uuid.UUID, error) {
	p, err := authctx.Require(ctx, tenantID, scope)
	if err != nil {
		return authctx.Principal{}, uuid.Nil, err
	}
	id, ok := wire.ParseID(orderID)
	if !ok {
		return authctx.Principal{}, uuid.Nil, wire.ErrOrderNotFound
	}
	return p, id, nil
}

// refundedPayment returns the payment of o a refund names by paymentId, or
// nil when it names none. An id that is not one of o's payments (another
// order's, or none at all) is a violation under PaymentId: refunding from
// the order's payments in order instead would give back money from a
// payment the caller did not mean.
func refundedPayment(v *apperr.Violations, o store.Order, paymentID string) *store.Payment {
	if paymentID == "" {
		return nil
	}
	if id, ok := wire.ParseID(paymentID); ok {
		for i := range o.Payments {
			if o.Payments[i].ID == id {
				return &o.Payments[i]
			}
		}
	}
	v.Add("PaymentId", "'PaymentId' is not a payment of this order.")
	return nil
}

// releaseAll gives the order's stock back; the inventory service's
// release is idempotent by order.
func (s *Server) releaseAll(ctx context.Context, p authctx.Principal, orderID uuid.UUID) error {
	err := s.stock.Release(ctx, p, &inventoryv1.ReleaseStockRequest{TenantId: p.TenantID, OrderId: orderID.String()})
	if err != nil {
		return peers.Upstream("The order changed but its stock could not be released yet; retry to release it.", err)
	}
	return nil
}
