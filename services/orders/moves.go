package orders

import (
	"context"
	"errors"
	"fmt"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// contactMoveServer serves the internal ContactMoveService the contacts
// service calls when it merges two contacts.
type contactMoveServer struct {
	ordersv1.UnimplementedContactMoveServiceServer
	s *Service
}

// MoveContactRecords moves the duplicate's orders, schedules and saved
// payment methods to the survivor and records the redirect, so that an
// order racing the merge, or created for the duplicate later, is recorded
// under the survivor (store/contacts.go). A repeat for the same pair
// answers what it moved this time: zeros.
func (a *contactMoveServer) MoveContactRecords(ctx context.Context, req *ordersv1.MoveContactRecordsRequest) (*ordersv1.MoveContactRecordsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ContactsMerge)
	if err != nil {
		return nil, err
	}
	dup, surv := req.GetDuplicateId(), req.GetSurvivorId()
	if err := validateMove(dup, surv); err != nil {
		return nil, err
	}
	c, err := a.s.store.MoveContactRecords(ctx, p.Tenant(), dup, surv, p.Actor())
	switch {
	case errors.Is(err, store.ErrAlreadyMerged):
		return nil, apperr.FieldRule(wire.CodeContactMerged, "DuplicateId", fmt.Sprintf("Contact %d was already merged into another contact.", dup))
	case errors.Is(err, store.ErrSurvivorMerged):
		return nil, apperr.FieldRule(wire.CodeContactMerged, "SurvivorId", fmt.Sprintf("Contact %d was merged into another contact.", surv))
	case err != nil:
		return nil, err
	}
	return &ordersv1.MoveContactRecordsResponse{Orders: c.Orders, Schedules: c.Schedules, PaymentMethods: c.PaymentMethods}, nil
}

// validateMove checks the two contact ids of a merge.
func validateMove(dup, surv int64) error {
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
