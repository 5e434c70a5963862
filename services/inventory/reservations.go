package inventory

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/inventory/store"
)

// maxLines bounds one reservation call; an order with more item lines
// than this is not a real order.
const maxLines = 500

// reservationServer serves the internal StockReservationService for the
// orders service. It is never mapped by the gateway.
type reservationServer struct {
	inventoryv1.UnimplementedStockReservationServiceServer
	s *Service
}

// ReserveStock reserves every line of an order or none. The orders service
// forwards its caller's principal, so the scope is the one that lets that
// caller create the order.
func (r *reservationServer) ReserveStock(ctx context.Context, req *inventoryv1.ReserveStockRequest) (*inventoryv1.ReserveStockResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.OrdersCreate)
	if err != nil {
		return nil, err
	}
	orderID, lines, err := validateReserve(req)
	if err != nil {
		return nil, err
	}
	rs, err := r.s.store.Reserve(ctx, p.Tenant(), orderID, lines, p.Actor())
	if err != nil {
		return nil, lineError(err, req.GetItems())
	}
	out := &inventoryv1.ReserveStockResponse{Items: make([]*inventoryv1.ReservedLine, 0, len(rs))}
	for _, x := range rs {
		out.Items = append(out.Items, toReservedLine(x))
	}
	return out, nil
}

// ReleaseStock gives back the stock of an order's lines. Voiding and
// refunding are the two operations that release, so either scope will do.
func (r *reservationServer) ReleaseStock(ctx context.Context, req *inventoryv1.ReleaseStockRequest) (*inventoryv1.ReleaseStockResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.OrdersVoid, scopes.OrdersRefund)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	orderID, err := uuid.Parse(req.GetOrderId())
	if err != nil {
		v.Add("OrderId", "'OrderId' must be a UUID.")
	}
	if len(req.GetLineNumbers()) > maxLines {
		v.Add("LineNumbers", "'LineNumbers' must hold %d lines or fewer.", maxLines)
	} else {
		for i, n := range req.GetLineNumbers() {
			if n < 1 {
				v.Add(indexPath("LineNumbers", i), "'LineNumbers' must hold numbers greater than 0.")
			}
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	rs, err := r.s.store.Release(ctx, p.Tenant(), orderID, req.GetLineNumbers(), p.Actor())
	if err != nil {
		return nil, lineError(err, nil)
	}
	out := &inventoryv1.ReleaseStockResponse{Lines: make([]*inventoryv1.ReleasedLine, 0, len(rs))}
	for _, x := range rs {
		out.Lines = append(out.Lines, toReleasedLine(x))
	}
	return out, nil
}

// validateReserve checks the request's shape and returns its order id and
// lines. An item id that does not parse becomes the nil UUID, which no
// item has, so the store reports it as Inventory.ItemNotFound in line
// order with the others.
func validateReserve(req *inventoryv1.ReserveStockRequest) (uuid.UUID, []store.ReserveLine, error) {
	var v apperr.Violations
	orderID, err := uuid.Parse(req.GetOrderId())
	if err != nil {
		v.Add("OrderId", "'OrderId' must be a UUID.")
	}
	items := req.GetItems()
	switch {
	case len(items) == 0:
		v.Add("Items", "'Items' must hold at least one line.")
	case len(items) > maxLines:
		v.Add("Items", "'Items' must hold %d lines or fewer.", maxLines)
	}
	if v.Has("Items") {
		return uuid.Nil, nil, v.Err()
	}
	lines := make([]store.ReserveLine, len(items))
	seen := make(map[int32]bool, len(items))
	for i, l := range items {
		path := indexPath("Items", i)
		switch n := l.GetLineNumber(); {
		case n < 1:
			v.Add(path+".LineNumber", "'LineNumber' must be greater than 0.")
		case seen[n]:
			v.Add(path+".LineNumber", "Line number %d appears more than once.", n)
		default:
			seen[n] = true
		}
		if l.GetQuantity() < 1 {
			v.Add(path+".Quantity", "'Quantity' must be greater than 0.")
		}
		id, _ := uuid.Parse(l.GetItemId()) // uuid.Nil when it does not parse
		lines[i] = store.ReserveLine{LineNumber: l.GetLineNumber(), ItemID: id, Quantity: l.GetQuantity()}
	}
	if err := v.Err(); err != nil {
		return uuid.Nil, nil, err
	}
	return orderID, lines, nil
}

// lineError maps a store line failure to its typed business rule under the
// failing line's property path; other errors pass through.
func lineError(err error, items []*inventoryv1.ReserveStockLine) error {
	var le *store.LineError
	if !errors.As(err, &le) {
		return err
	}
	path := indexPath("Items", le.Index)
	switch le.Reason {
	case store.ItemNotFound:
		id := ""
		if le.Index < len(items) {
			id = truncate(items[le.Index].GetItemId(), 40)
		}
		return apperr.FieldRule(codeItemNotFound, path+".ItemId", fmt.Sprintf("Item '%s' was not found.", id))
	case store.ItemInactive:
		return apperr.FieldRule(codeItemInactive, path+".ItemId", fmt.Sprintf("Item '%s' is inactive.", le.SKU))
	case store.InsufficientStock:
		return apperr.FieldRule(codeInsufficientStock, path+".Quantity",
			fmt.Sprintf("Insufficient stock for '%s': %d available, %d requested.", le.SKU, max(le.Available, 0), le.Requested))
	case store.ReservationMismatch:
		return apperr.FieldRule(codeReservationMismatch, path,
			fmt.Sprintf("Line %d of this order was already reserved with another item or quantity.", le.LineNumber))
	case store.ReservationReleased:
		return apperr.FieldRule(codeReservationReleased, path,
			fmt.Sprintf("Line %d of this order was reserved and released already; it cannot be reserved again.", le.LineNumber))
	case store.ReservationNotFound:
		return apperr.FieldRule(codeReservationNotFound, indexPath("LineNumbers", le.Index),
			fmt.Sprintf("Line %d of this order holds no reservation.", le.LineNumber))
	}
	return err
}
