package orders

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// acknowledgementServer is the OrderAcknowledgementService and the
// internal AcknowledgementClaimService (docs/letters.md).
type acknowledgementServer struct {
	ordersv1.UnimplementedOrderAcknowledgementServiceServer
	ordersv1.UnimplementedAcknowledgementClaimServiceServer
	s *Service
}

// UpdateOrderAcknowledgement sets a gift to doNotAcknowledge or back to
// pending.
func (a *acknowledgementServer) UpdateOrderAcknowledgement(ctx context.Context, req *ordersv1.UpdateOrderAcknowledgementRequest) (*ordersv1.UpdateOrderAcknowledgementResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.DocumentsManage)
	if err != nil {
		return nil, err
	}
	status := req.GetStatus()
	if status != store.AckPending && status != store.AckDoNotAcknowledge {
		return nil, apperr.Invalid(apperr.Violation{Field: "Status", Message: "'Status' must be one of: pending, doNotAcknowledge."})
	}
	id, ok := wire.ParseID(req.GetOrderId())
	if !ok {
		return nil, wire.ErrOrderNotFound
	}
	tenant := p.Tenant()
	err = a.s.store.SetAcknowledgement(ctx, tenant, id, status, p.Actor())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, wire.ErrOrderNotFound
	case errors.Is(err, store.ErrNotAGift):
		return nil, apperr.Invalid(apperr.Violation{Field: "OrderId", Message: "The order has no donation line: only gifts are acknowledged."})
	case err != nil:
		return nil, err
	}
	o, err := a.s.store.GetOrder(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	out := wire.ToOrder(o)
	if err := a.s.withAcknowledgements(ctx, tenant, out); err != nil {
		return nil, err
	}
	return &ordersv1.UpdateOrderAcknowledgementResponse{Order: out}, nil
}

// maxClaim is the most gifts one claim names: a run's batch.
const maxClaim = 1000

// ClaimAcknowledgements acknowledges a letter run's gifts at most once.
func (a *acknowledgementServer) ClaimAcknowledgements(ctx context.Context, req *ordersv1.ClaimAcknowledgementsRequest) (*ordersv1.ClaimAcknowledgementsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.DocumentsManage)
	if err != nil {
		return nil, err
	}
	run, err := uuid.Parse(req.GetRunId())
	if err != nil {
		return nil, apperr.Invalid(apperr.Violation{Field: "RunId", Message: "'RunId' must be a UUID."})
	}
	if len(req.GetOrderIds()) > maxClaim {
		return nil, apperr.Invalid(apperr.Violation{Field: "OrderIds", Message: "At most 1000 gifts are claimed at once."})
	}
	ids := make([]uuid.UUID, 0, len(req.GetOrderIds()))
	for _, s := range req.GetOrderIds() {
		if id, ok := wire.ParseID(s); ok {
			ids = append(ids, id)
		}
	}
	claimed, err := a.s.store.ClaimAcknowledgements(ctx, p.Tenant(), run, ids, p.Actor())
	if err != nil {
		return nil, err
	}
	out := &ordersv1.ClaimAcknowledgementsResponse{OrderIds: make([]string, len(claimed))}
	for i, id := range claimed {
		out.OrderIds[i] = id.String()
	}
	return out, nil
}

// withAcknowledgements fills the acknowledgement of each order that is a
// gift. It is read apart from the order (one more query per answer) so
// the order's own reads stay as they are.
func (s *Service) withAcknowledgements(ctx context.Context, tenant uuid.UUID, orders ...*ordersv1.Order) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(orders))
	for _, o := range orders {
		if id, ok := wire.ParseID(o.GetId()); ok {
			ids = append(ids, id)
		}
	}
	acks, err := s.store.Acknowledgements(ctx, tenant, ids)
	if err != nil {
		return err
	}
	for _, o := range orders {
		id, _ := wire.ParseID(o.GetId())
		a, ok := acks[id]
		if !ok {
			continue
		}
		o.AcknowledgementStatus = &a.Status
		if a.At != nil {
			o.AcknowledgedAt = timestamppb.New(*a.At)
		}
		if a.RunID != nil {
			run := a.RunID.String()
			o.AcknowledgementRunId = &run
		}
	}
	return nil
}

// acknowledgementFilter reads the list's acknowledgementStatus filter.
func acknowledgementFilter(v *apperr.Violations, s string) string {
	switch s {
	case "", store.AckPending, store.AckAcknowledged, store.AckDoNotAcknowledge:
		return s
	}
	v.Add("AcknowledgementStatus", "'AcknowledgementStatus' must be one of: pending, acknowledged, doNotAcknowledge.")
	return ""
}

// newGiftPending says what a new gift's acknowledgement is, pending,
// without reading it back: the order was just written with it.
func newGiftPending(o *ordersv1.Order) {
	if o != nil && len(o.GetDonations()) > 0 && o.AcknowledgementStatus == nil {
		pending := store.AckPending
		o.AcknowledgementStatus = &pending
	}
}
