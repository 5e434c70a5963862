package fulfillment

import (
	"context"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// contactMove serves the internal ShipmentContactMoveService the contacts
// service's merge saga calls. It is never mapped by the gateway.
type contactMove struct {
	inventoryv1.UnimplementedShipmentContactMoveServiceServer
	store *shipstore.Store
}

// MoveContactShipments moves the duplicate's shipments to the survivor. The
// saga may call it again after a failure or from its recovery loop; a
// repeat answers what it moved this time: zero.
func (c *contactMove) MoveContactShipments(ctx context.Context, req *inventoryv1.MoveContactShipmentsRequest) (*inventoryv1.MoveContactShipmentsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsMerge)
	if err != nil {
		return nil, err
	}
	dup, surv := req.GetDuplicateId(), req.GetSurvivorId()
	if err := validateContactMove(dup, surv); err != nil {
		return nil, err
	}
	n, err := c.store.MoveContact(ctx, p.Tenant(), dup, surv, p.Actor())
	if err != nil {
		return nil, mapError(err)
	}
	return &inventoryv1.MoveContactShipmentsResponse{Shipments: n}, nil
}

// validateContactMove checks the two contact ids of a merge.
func validateContactMove(dup, surv int64) error {
	var v apperr.Violations
	if dup <= 0 {
		v.Add("DuplicateId", "'DuplicateId' must be greater than 0.")
	}
	if surv <= 0 {
		v.Add("SurvivorId", "'SurvivorId' must be greater than 0.")
	}
	if dup > 0 && dup == surv {
		v.Add("DuplicateId", "A contact cannot be merged into itself.")
	}
	return v.Err()
}
