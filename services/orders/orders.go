package orders

import (
	"context"
	"errors"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/wire"
)

// orderServer serves /api/tenants/{tid}/orders: reading orders here,
// creating them in the checkout room, refunds and voids in the changes
// room.
type orderServer struct {
	ordersv1.UnimplementedOrderServiceServer
	s *Service
}

// CreateOrder records an order (checkout.Service).
func (a *orderServer) CreateOrder(ctx context.Context, req *ordersv1.CreateOrderRequest) (*ordersv1.CreateOrderResponse, error) {
	resp, err := a.s.checkout.CreateOrder(ctx, req)
	if err == nil {
		newGiftPending(resp.GetOrder())
	}
	return resp, err
}

// VoidOrder voids an order (changes.Server).
func (a *orderServer) VoidOrder(ctx context.Context, req *ordersv1.VoidOrderRequest) (*ordersv1.VoidOrderResponse, error) {
	return a.s.changes.VoidOrder(ctx, req)
}

// CreateOrderRefund refunds an order (changes.Server).
func (a *orderServer) CreateOrderRefund(ctx context.Context, req *ordersv1.CreateOrderRefundRequest) (*ordersv1.CreateOrderRefundResponse, error) {
	return a.s.changes.CreateOrderRefund(ctx, req)
}

// GetOrder reads one order; an id that does not parse is not found.
func (a *orderServer) GetOrder(ctx context.Context, req *ordersv1.GetOrderRequest) (*ordersv1.GetOrderResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.DonationsView, scopes.OrdersView)
	if err != nil {
		return nil, err
	}
	id, ok := wire.ParseID(req.GetOrderId())
	if !ok {
		return nil, wire.ErrOrderNotFound
	}
	o, err := a.s.store.GetOrder(ctx, p.Tenant(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, wire.ErrOrderNotFound
	}
	if err != nil {
		return nil, err
	}
	out := wire.ToOrder(o)
	if err := a.s.withAcknowledgements(ctx, o.TenantID, out); err != nil {
		return nil, err
	}
	if err := a.s.withShipments(ctx, p, o, out); err != nil {
		return nil, err
	}
	return &ordersv1.GetOrderResponse{Order: out}, nil
}
