package contacts

import (
	"context"
	"errors"
	"fmt"
	"slices"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/traceid"
	"github.com/almoner/almoner/services/contacts/store"
)

// Domain errors of merging.
var (
	errMergeItself = apperr.Rule("Contact.MergeIntoItself", "A contact cannot be merged into itself.")
	errMergeTypes  = apperr.Rule("Contact.MergeTypeMismatch", "An individual and an organization cannot be merged.")
	errMergeBusy   = apperr.Conflict("Contact.MergeInProgress", "A merge of one of these contacts has not finished yet; retry shortly.")
)

// MergeContacts merges the duplicate into the contact in the path, as a
// forward-recovering saga (docs/merge.md): validate, authorize, record the
// pending merge (store.BeginMerge), move the orders (orders
// ContactMoveService), move the shipments (inventory
// ShipmentContactMoveService), finish (store.FinishMerge).
func (c *contactServer) MergeContacts(ctx context.Context, req *contactsv1.MergeContactsRequest) (*contactsv1.MergeContactsResponse, error) {
	p, tenant, err := authorize(ctx, req.GetTenantId(), scopes.ContactsMerge)
	if err != nil {
		return nil, err
	}
	if err := validContactID(req.GetContactId()); err != nil {
		return nil, err
	}
	if err := validateMerge(req); err != nil {
		return nil, err
	}
	m, err := c.s.store.BeginMerge(ctx, store.Merge{Tenant: tenant, Survivor: req.GetContactId(), Duplicate: req.GetDuplicateId(),
		Choices: req.GetFieldChoices(), Actor: p.Actor()})
	if err != nil {
		return nil, mergeError(err)
	}
	var ct store.Contact
	if m.Done {
		ct, err = c.s.store.Get(ctx, tenant, m.Survivor)
	} else {
		ct, err = c.s.completeMerge(ctx, p, m)
	}
	if err != nil {
		return nil, mergeError(err)
	}
	setETag(ctx, ct.Version)
	return &contactsv1.MergeContactsResponse{Contact: toContact(ct)}, nil
}

// validateMerge checks the duplicate id and the field choices.
func validateMerge(req *contactsv1.MergeContactsRequest) error {
	var v apperr.Violations
	switch {
	case req.GetDuplicateId() <= 0:
		v.Add("DuplicateId", "'Duplicate Id' must be greater than 0.")
	case req.GetDuplicateId() == req.GetContactId():
		return errMergeItself
	}
	for k, val := range req.GetFieldChoices() {
		field := "FieldChoices." + k
		switch {
		case !slices.Contains(store.MergeChoices, k):
			v.Add(field, "'%s' is not a property a merge chooses; choose among %v.", k, store.MergeChoices)
		case val != store.ChooseSurvivor && val != store.ChooseDuplicate:
			v.Add(field, "'%s' must be survivor or duplicate.", k)
		}
	}
	return v.Err()
}

// mergeError maps the store's merge refusals to domain errors. A tombstone
// is the 404 naming its survivor whichever side it is on.
func mergeError(err error) error {
	var ref *store.MergeRefError
	switch {
	case errors.Is(err, store.ErrMergeTypes):
		return errMergeTypes
	case errors.Is(err, store.ErrMergeBusy):
		return errMergeBusy
	case errors.As(err, &ref):
		return storeError(ref.Err)
	}
	return storeError(err)
}

// completeMerge runs the saga's steps after the pending row: the orders
// service moves the duplicate's orders, schedules and saved methods, the
// inventory service its shipments (both idempotent by duplicate: a
// repeat moves what is left), then the rest moves and the duplicate
// becomes a tombstone. A failure leaves the merge pending; the request
// may be sent again, and the recovery loop finishes it after
// Config.MergeRecoveryAge anyway, repeating every step.
func (s *Service) completeMerge(ctx context.Context, p authctx.Principal, m store.Merge) (store.Contact, error) {
	callCtx := authctx.NewOutgoingContext(traceid.Forward(ctx), p)
	if err := s.moveOrders(callCtx, m); err != nil {
		return store.Contact{}, err
	}
	if err := s.moveShipments(callCtx, m); err != nil {
		return store.Contact{}, err
	}
	return s.store.FinishMerge(ctx, m)
}

// moveOrders is the saga's orders step (orders ContactMoveService).
func (s *Service) moveOrders(callCtx context.Context, m store.Merge) error {
	mover, err := s.moveClient()
	if err != nil {
		return err
	}
	if _, err := mover.MoveContactRecords(callCtx, &ordersv1.MoveContactRecordsRequest{
		TenantId: m.Tenant.String(), DuplicateId: m.Duplicate, SurvivorId: m.Survivor}); err != nil {
		return fmt.Errorf("move the orders of contact %d: %w", m.Duplicate, err)
	}
	return nil
}

// moveShipments is the saga's shipments step (inventory
// ShipmentContactMoveService). It runs after the orders step: the orders
// outbox reads an order's contact when it creates the order's shipment,
// so a shipment created after the orders moved names the survivor
// already, and one created before is moved here.
func (s *Service) moveShipments(callCtx context.Context, m store.Merge) error {
	mover, err := s.shipmentMoveClient()
	if err != nil {
		return err
	}
	if _, err := mover.MoveContactShipments(callCtx, &inventoryv1.MoveContactShipmentsRequest{
		TenantId: m.Tenant.String(), DuplicateId: m.Duplicate, SurvivorId: m.Survivor}); err != nil {
		return fmt.Errorf("move the shipments of contact %d: %w", m.Duplicate, err)
	}
	return nil
}

// recoverMerges finishes the merges pending for longer than
// Config.MergeRecoveryAge (a process that died between the saga's steps,
// an orders service that was down), with the principal of the system
// acting for the actor who asked, so the audit rows name them. Every
// replica runs it; FinishMerge does a merge once.
func (s *Service) recoverMerges(ctx context.Context) error {
	pending, err := s.store.PendingMerges(ctx, s.cfg.MergeRecoveryAge, 100)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range pending {
		p := authctx.System(m.Tenant.String(), m.Actor, scopes.ContactsMerge)
		if _, err := s.completeMerge(ctx, p, m); err != nil {
			errs = append(errs, fmt.Errorf("merge of %d into %d (tenant %s): %w", m.Duplicate, m.Survivor, m.Tenant, err))
		}
	}
	return errors.Join(errs...)
}
