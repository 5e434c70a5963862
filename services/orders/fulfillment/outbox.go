// Package fulfillment is the orders service's side of shipments: the
// outbox that hands each item order with a shipping address to the
// inventory service, which owns shipments (docs/architecture.md, "Where
// shipments live"). The order's transaction writes the request row
// (store.queueShipmentRequest); Handoff delivers it right after the
// commit, and DeliverOnce (the sweeper's pass) delivers whatever a dead
// process or a failed handoff left. No transaction is open during a call.
package fulfillment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store"
)

// handoffTimeout bounds the handoff after an order's commit: the client
// waits for it, and a slow inventory leaves the request to the sweeper.
const handoffTimeout = 2 * time.Second

// passSize is how many requests a pass reads at a time.
const passSize = 100

// actor is the audit actor of the outbox's calls.
const actor = "orders:fulfillment"

// Outbox delivers shipment requests to the inventory service.
type Outbox struct {
	store     *store.Store
	shipments peers.Shipments
	now       func() time.Time
	logger    *slog.Logger
}

// New returns the outbox; a nil shipments peer delivers nothing (a
// process without inventory) and leaves the rows to one that has it.
func New(st *store.Store, shipments peers.Shipments, now func() time.Time, logger *slog.Logger) *Outbox {
	return &Outbox{store: st, shipments: shipments, now: now, logger: logger}
}

// Handoff delivers a just-recorded order's request. A failure is logged
// and left to the sweeper: the order is recorded either way.
func (o *Outbox) Handoff(ctx context.Context, order store.Order) {
	if o == nil || o.shipments == nil || !store.NeedsShipment(order) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handoffTimeout)
	defer cancel()
	if err := o.deliver(ctx, order); err != nil {
		o.logger.WarnContext(ctx, "hand the order's shipment to inventory: left to the sweeper", "order_id", order.ID, "error", err)
	}
}

// DeliverOnce delivers every request written before now and returns how
// many it delivered. A request whose delivery fails stays for the next
// pass.
func (o *Outbox) DeliverOnce(ctx context.Context) (int, error) {
	if o == nil || o.shipments == nil {
		return 0, nil
	}
	before := o.now()
	delivered, failed := 0, map[uuid.UUID]bool{}
	for ctx.Err() == nil {
		reqs, err := o.store.ShipmentRequests(ctx, before, passSize+len(failed))
		if err != nil {
			return delivered, err
		}
		fresh := 0
		for _, r := range reqs {
			if failed[r.OrderID] {
				continue
			}
			fresh++
			if err := o.deliverRequest(ctx, r); err != nil {
				failed[r.OrderID] = true
				o.logger.ErrorContext(ctx, "deliver a shipment request: left for the next pass", "order_id", r.OrderID, "error", err)
				continue
			}
			delivered++
		}
		if fresh == 0 {
			return delivered, nil
		}
	}
	return delivered, ctx.Err()
}

// deliverRequest reads the request's order and delivers it.
func (o *Outbox) deliverRequest(ctx context.Context, r store.ShipmentRequest) error {
	order, err := o.store.GetOrder(ctx, r.TenantID, r.OrderID)
	if err != nil {
		return err
	}
	return o.deliver(ctx, order)
}

// deliver asks inventory for the order's shipment (idempotent by order
// id), then deletes the request.
func (o *Outbox) deliver(ctx context.Context, order store.Order) error {
	tenant := order.TenantID.String()
	p := authctx.System(tenant, actor, scopes.OrdersCreate)
	req := &inventoryv1.CreateOrderShipmentRequest{TenantId: tenant, OrderId: order.ID.String(), OrderNumber: order.OrderNumber,
		OrderDate: timestamppb.New(order.CreatedAt), ContactId: order.ContactID, BatchId: order.BatchID.String(),
		ShippingAddress: &inventoryv1.ShippingAddress{Line1: order.Shipping.Line1, Line2: order.Shipping.Line2, City: order.Shipping.City,
			StateProvince: order.Shipping.StateProvince, PostalCode: order.Shipping.PostalCode, Country: order.Shipping.Country}}
	for _, it := range order.Items {
		req.LineNumbers = append(req.LineNumbers, it.LineNumber)
	}
	if err := o.shipments.Create(ctx, p, req); err != nil {
		return fmt.Errorf("create shipment of order %s: %w", order.ID, err)
	}
	return o.store.DeleteShipmentRequest(ctx, order.TenantID, order.ID)
}

// IDs returns the ids of an order's shipments for its answer; none for an
// order that does not ship.
func (o *Outbox) IDs(ctx context.Context, p authctx.Principal, order store.Order) ([]string, error) {
	if o == nil || o.shipments == nil || !store.NeedsShipment(order) {
		return nil, nil
	}
	return o.shipments.IDs(ctx, p, order.ID.String())
}
