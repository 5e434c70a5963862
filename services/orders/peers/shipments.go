package peers

import (
	"context"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
)

// Shipments is what orders needs from the inventory service's
// fulfillment room: creating an order's shipment from its outbox row, and
// the ids of an order's shipments for GET /orders/{id}.
type Shipments interface {
	Create(ctx context.Context, p authctx.Principal, req *inventoryv1.CreateOrderShipmentRequest) error
	IDs(ctx context.Context, p authctx.Principal, orderID string) ([]string, error)
}

// GRPCShipments is Shipments over the inventory service's internal
// ShipmentCreationService.
type GRPCShipments struct {
	// Conn dials the inventory service.
	Conn func() (inventoryv1.ShipmentCreationServiceClient, error)
}

// Create creates (or finds) an order's first shipment.
func (g GRPCShipments) Create(ctx context.Context, p authctx.Principal, req *inventoryv1.CreateOrderShipmentRequest) error {
	c, err := g.Conn()
	if err != nil {
		return apperr.Unavailable("The shipment cannot be created right now.", err)
	}
	_, err = c.CreateOrderShipment(outgoing(ctx, p), req)
	return err
}

// IDs lists an order's shipment ids, oldest first.
func (g GRPCShipments) IDs(ctx context.Context, p authctx.Principal, orderID string) ([]string, error) {
	c, err := g.Conn()
	if err != nil {
		return nil, apperr.Unavailable("The order's shipments cannot be read right now.", err)
	}
	resp, err := c.ListOrderShipmentIds(outgoing(ctx, p), &inventoryv1.ListOrderShipmentIdsRequest{TenantId: p.TenantID, OrderId: orderID})
	if err != nil {
		return nil, Upstream("The order's shipments cannot be read right now.", err)
	}
	return resp.GetShipmentIds(), nil
}
