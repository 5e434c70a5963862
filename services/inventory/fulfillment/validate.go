package fulfillment

import (
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/services/inventory/fulfillment/state"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// Bounds of the shipments' fields.
const (
	maxCarrier    = 100
	maxTracking   = 100
	maxURL        = 2000
	maxReason     = 500
	maxAddress    = 200
	maxSplitLines = 500
)

var statuses = map[string]bool{state.Pending: true, state.Packed: true, state.Shipped: true, state.Delivered: true,
	state.Cancelled: true, state.Returned: true}

// listFilter reads the list's filters.
func listFilter(req *inventoryv1.ListShipmentsRequest) (shipstore.Filter, error) {
	var v apperr.Violations
	f := shipstore.Filter{Status: strings.TrimSpace(req.GetStatus()), ContactID: req.ContactId}
	if f.Status != "" && !statuses[f.Status] {
		v.Add("Status", "'Status' must be one of pending, packed, shipped, delivered, cancelled, returned.")
	}
	f.BatchID = optionalID(&v, "BatchId", req.GetBatchId())
	f.OrderID = optionalID(&v, "OrderId", req.GetOrderId())
	f.From = paging.TimeBound(&v, "From", req.GetFrom())
	f.To = paging.TimeBound(&v, "To", req.GetTo())
	return f, v.Err()
}

// optionalID parses an optional UUID filter.
func optionalID(v *apperr.Violations, field, s string) *uuid.UUID {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		v.Add(field, "'%s' must be a UUID.", field)
		return nil
	}
	return &id
}

// text checks a trimmed text of at most limit characters, required or not.
func text(v *apperr.Violations, field, s string, limit int, required bool) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "" && required:
		v.Add(field, "'%s' must not be empty.", field)
	case utf8.RuneCountInString(s) > limit:
		v.Add(field, "'%s' must be %d characters or fewer.", field, limit)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		v.Add(field, "'%s' must not contain control characters.", field)
	}
	return s
}

// shipMove checks a ship's carrier and tracking; prefix is the property
// path of a bulk row ("" for the single ship).
func shipMove(prefix, carrier, tracking, url string) (shipstore.Move, error) {
	var v apperr.Violations
	m := shipstore.Move{Action: state.Ship}
	m.Carrier = text(&v, prefix+"Carrier", carrier, maxCarrier, true)
	m.TrackingNumber = text(&v, prefix+"TrackingNumber", tracking, maxTracking, true)
	m.TrackingURL = text(&v, prefix+"TrackingUrl", url, maxURL, false)
	if m.TrackingURL != "" && !strings.HasPrefix(m.TrackingURL, "https://") && !strings.HasPrefix(m.TrackingURL, "http://") {
		v.Add(prefix+"TrackingUrl", "'TrackingUrl' must be an http or https URL.")
	}
	return m, v.Err()
}

// requiredReason checks a cancel's or return's reason.
func requiredReason(s string) (string, error) {
	var v apperr.Violations
	r := text(&v, "Reason", s, maxReason, true)
	return r, v.Err()
}

// validAddress checks a ship-to address under field.
func validAddress(field string, a *inventoryv1.ShippingAddress) (shipstore.Address, error) {
	var v apperr.Violations
	if a == nil {
		v.Add(field, "'%s' is required.", field)
		return shipstore.Address{}, v.Err()
	}
	out := shipstore.Address{
		Line1:         text(&v, field+".Line1", a.GetLine1(), maxAddress, true),
		Line2:         text(&v, field+".Line2", a.GetLine2(), maxAddress, false),
		City:          text(&v, field+".City", a.GetCity(), maxAddress, true),
		StateProvince: text(&v, field+".StateProvince", a.GetStateProvince(), maxAddress, false),
		PostalCode:    text(&v, field+".PostalCode", a.GetPostalCode(), maxAddress, true),
		Country:       text(&v, field+".Country", a.GetCountry(), maxAddress, true),
	}
	return out, v.Err()
}

// splitParts checks a split's lines.
func splitParts(lines []*inventoryv1.SplitLine) ([]shipstore.SplitPart, error) {
	var v apperr.Violations
	switch {
	case len(lines) == 0:
		v.Add("Lines", "'Lines' must hold at least one line.")
	case len(lines) > maxSplitLines:
		v.Add("Lines", "'Lines' must hold %d lines or fewer.", maxSplitLines)
	}
	if v.Has("Lines") {
		return nil, v.Err()
	}
	parts := make([]shipstore.SplitPart, len(lines))
	for i, l := range lines {
		id, err := uuid.Parse(l.GetItemId())
		if err != nil {
			v.Add(indexPath("Lines", i)+".ItemId", "'ItemId' must be a UUID.")
		}
		if l.GetQuantity() < 1 {
			v.Add(indexPath("Lines", i)+".Quantity", "'Quantity' must be greater than 0.")
		}
		parts[i] = shipstore.SplitPart{ItemID: id, Quantity: l.GetQuantity()}
	}
	return parts, v.Err()
}
