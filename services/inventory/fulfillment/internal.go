package fulfillment

import (
	"context"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// creation serves the internal ShipmentCreationService for the orders
// service's outbox. It is never mapped by the gateway.
type creation struct {
	inventoryv1.UnimplementedShipmentCreationServiceServer
	store *shipstore.Store
}

// CreateOrderShipment creates an order's first shipment, once: the outbox
// may deliver a request twice (after a crash, or from two runners).
func (c *creation) CreateOrderShipment(ctx context.Context, req *inventoryv1.CreateOrderShipmentRequest) (*inventoryv1.CreateOrderShipmentResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.OrdersCreate)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	orderID, err := uuid.Parse(req.GetOrderId())
	if err != nil {
		v.Add("OrderId", "'OrderId' must be a UUID.")
	}
	batchID := optionalID(&v, "BatchId", req.GetBatchId())
	if len(req.GetLineNumbers()) == 0 {
		v.Add("LineNumbers", "'LineNumbers' must hold at least one line.")
	}
	a := req.GetShippingAddress()
	if err := v.Err(); err != nil {
		return nil, err
	}
	replayed, err := c.store.Create(ctx, shipstore.NewShipment{TenantID: p.Tenant(), OrderID: orderID,
		OrderNumber: req.GetOrderNumber(), OrderDate: req.GetOrderDate().AsTime(), ContactID: req.GetContactId(), BatchID: batchID,
		Address: shipstore.Address{Line1: a.GetLine1(), Line2: a.GetLine2(), City: a.GetCity(), StateProvince: a.GetStateProvince(),
			PostalCode: a.GetPostalCode(), Country: a.GetCountry()},
		LineNumbers: req.GetLineNumbers()})
	if err != nil {
		return nil, mapError(err)
	}
	return &inventoryv1.CreateOrderShipmentResponse{ShipmentId: orderID.String(), Replayed: replayed}, nil
}

// ListOrderShipmentIds answers an order's shipment ids for GET /orders/{id}.
func (c *creation) ListOrderShipmentIds(ctx context.Context, req *inventoryv1.ListOrderShipmentIdsRequest) (*inventoryv1.ListOrderShipmentIdsResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.OrdersView, scopes.DonationsView)
	if err != nil {
		return nil, err
	}
	orderID, err := uuid.Parse(req.GetOrderId())
	if err != nil {
		return nil, apperr.Invalid(apperr.Violation{Field: "OrderId", Message: "'OrderId' must be a UUID."})
	}
	ids, err := c.store.OrderShipmentIDs(ctx, p.Tenant(), orderID)
	if err != nil {
		return nil, err
	}
	out := &inventoryv1.ListOrderShipmentIdsResponse{ShipmentIds: make([]string, len(ids))}
	for i, id := range ids {
		out.ShipmentIds[i] = id.String()
	}
	return out, nil
}
