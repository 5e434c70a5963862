package fulfillment

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// maxBulkShip bounds one tracking file.
const maxBulkShip = 1000

// bulkWorkers is how many rows of a tracking file are applied at once:
// each row is its own transaction, and a few in flight hide the round
// trips without taking the pool.
const bulkWorkers = 4

// ShipShipments applies each row of a tracking file on its own: a bad row
// is refused with its reason and the others go on.
func (s *Server) ShipShipments(ctx context.Context, req *inventoryv1.ShipShipmentsRequest) (*inventoryv1.ShipShipmentsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ShipmentsManage)
	if err != nil {
		return nil, err
	}
	items := req.GetItems()
	switch {
	case len(items) == 0:
		return nil, apperr.Invalid(apperr.Violation{Field: "Items", Message: "'Items' must hold at least one row."})
	case len(items) > maxBulkShip:
		return nil, apperr.FieldRule(codeTooMany, "Items",
			fmt.Sprintf("'Items' holds %d rows; at most %d can be shipped per call.", len(items), maxBulkShip))
	}
	results := make([]*inventoryv1.BulkShipResult, len(items))
	rows := make(chan int)
	var wg sync.WaitGroup
	for range min(bulkWorkers, len(items)) {
		wg.Go(func() {
			for i := range rows {
				results[i] = s.shipRow(ctx, p, items[i])
			}
		})
	}
	for i := range items {
		rows <- i
	}
	close(rows)
	wg.Wait()
	return &inventoryv1.ShipShipmentsResponse{Results: results}, nil
}

// shipRow applies one row and answers its result.
func (s *Server) shipRow(ctx context.Context, p authctx.Principal, it *inventoryv1.BulkShipItem) *inventoryv1.BulkShipResult {
	out := &inventoryv1.BulkShipResult{ShipmentId: it.GetShipmentId()}
	id, err := uuid.Parse(it.GetShipmentId())
	if err != nil {
		out.Error = rowError(errShipmentNotFound)
		return out
	}
	m, err := shipMove("", it.GetCarrier(), it.GetTrackingNumber(), it.GetTrackingUrl())
	if err != nil {
		out.Error = rowError(err)
		return out
	}
	sh, err := s.store.Transition(ctx, p.Tenant(), id, m, p.Actor())
	if err != nil {
		out.Error = rowError(mapError(err))
		return out
	}
	out.Status = &sh.Status
	return out
}

// rowError is a refused row's code and message; an error that is not the
// API's is not shown.
func rowError(err error) *inventoryv1.BulkShipError {
	ae, ok := apperr.As(err)
	if !ok {
		return &inventoryv1.BulkShipError{Code: "Internal", Message: "The row could not be applied; send it again."}
	}
	code, msg := ae.Code, ae.Message
	if code == "" {
		code = kindCodes[ae.Kind]
	}
	if len(ae.Violations) > 0 {
		msg = ae.Violations[0].Message
	}
	return &inventoryv1.BulkShipError{Code: code, Message: msg}
}

// kindCodes name a row's refusal that has no typed code.
var kindCodes = map[apperr.Kind]string{apperr.KindInvalid: "Invalid", apperr.KindNotFound: "NotFound"}
