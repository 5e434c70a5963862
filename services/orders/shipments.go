package orders

import (
	"context"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/services/orders/store"
)

// withShipments fills an order's shipmentIds: its shipments, which the
// inventory service owns (docs/fulfillment.md). An order whose shipment
// request is still in the outbox lists its first shipment's id (the
// order's) all the same: it will exist.
func (s *Service) withShipments(ctx context.Context, p authctx.Principal, o store.Order, out *ordersv1.Order) error {
	if !store.NeedsShipment(o) {
		return nil
	}
	ids, err := s.outbox.IDs(ctx, p, o)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		ids = []string{o.ID.String()}
	}
	out.ShipmentIds = ids
	return nil
}

// deliverShipments delivers the shipment requests a failed handoff or a
// dead process left (fulfillment.Outbox.DeliverOnce), after each sweep.
func (s *Service) deliverShipments(ctx context.Context) {
	if _, err := s.outbox.DeliverOnce(ctx); err != nil && ctx.Err() == nil {
		s.logger.ErrorContext(ctx, "deliver shipment requests", "error", err)
	}
}
