package orders

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// listCursor is the keyset token of the order list: the last id served,
// the page it leads to, the filters it was made for, and the total counted
// when the listing started.
//
// Carrying the total (as the contacts list does) keeps deep pages cheap:
// the keyset page is an index range scan whatever its depth, but the
// exact count of a large tenant's orders is the one cost that grows with
// the tenant (docs/performance.md), and a client paging through them
// would otherwise pay it on every page. A token without a total (made
// before it was carried) counts again.
type listCursor struct {
	After uuid.UUID `json:"a"`
	paging.Position
}

var orderStatuses = []string{store.StatusPending, store.StatusCompleted, store.StatusPartiallyRefunded, store.StatusRefunded, store.StatusVoided, store.StatusFailed}

// ListOrders returns a page of the tenant's orders, newest first: the
// filters are read, a page token is checked against them, the page is
// read by keyset (after a token) or offset, and the next token made.
func (a *orderServer) ListOrders(ctx context.Context, req *ordersv1.ListOrdersRequest) (*ordersv1.ListOrdersResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.DonationsView, scopes.OrdersView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, req.GetPageToken(), paging.Standard)
	if err != nil {
		return nil, err
	}
	f, err := orderFilter(req)
	if err != nil {
		return nil, err
	}
	key := filterKey(f, pg.Size)
	list, total, next, err := paging.Keyset(&pg, key,
		func(after *listCursor, count bool) ([]store.Order, int64, error) {
			var id *uuid.UUID
			if after != nil {
				id = &after.After
			}
			return a.s.store.ListOrders(ctx, p.Tenant(), f, pg.Size, pg.Offset(), id, !count)
		},
		func(last store.Order) listCursor { return listCursor{After: last.ID} })
	if err != nil {
		return nil, err
	}
	out := &ordersv1.ListOrdersResponse{Items: paging.Convert(list, wire.ToOrder), TotalCount: total, Page: pg.Number, PageSize: pg.Size, NextPageToken: next}
	if err := a.s.withAcknowledgements(ctx, p.Tenant(), out.Items...); err != nil {
		return nil, err
	}
	return out, nil
}

// orderFilter reads the list's query filters; every unreadable one is a
// violation under its name.
func orderFilter(req *ordersv1.ListOrdersRequest) (store.OrderFilter, error) {
	var v apperr.Violations
	f := store.OrderFilter{ContactID: req.ContactId, CampaignID: strings.TrimSpace(req.GetCampaignId())}
	if s := req.GetStatus(); s != "" {
		if f.Status = normalize.OneOf(orderStatuses, s); f.Status == "" {
			v.Add("Status", "'Status' must be one of %s.", strings.Join(orderStatuses, ", "))
		}
	}
	if s := req.GetLineKind(); s != "" {
		if f.LineKind = normalize.OneOf([]string{"Donation", "Item"}, s); f.LineKind == "" {
			v.Add("LineKind", "'LineKind' must be Donation or Item.")
		}
	}
	f.FundID, f.BatchID = optionalID(&v, "FundId", req.GetFundId()), optionalID(&v, "BatchId", req.GetBatchId())
	f.ScheduleID = optionalID(&v, "RecurringDonationId", req.GetRecurringDonationId())
	f.From, f.To = paging.TimeBound(&v, "CreatedFrom", req.GetCreatedFrom()), paging.TimeBound(&v, "CreatedTo", req.GetCreatedTo())
	// Amount filters compare in minor units of two decimals, the exponent
	// of nearly every currency; an exact filter for JPY orders uses whole
	// numbers, which parse the same.
	f.MinAmount, f.MaxAmount = optionalAmount(&v, "MinAmount", req.GetMinAmount().GetValue()), optionalAmount(&v, "MaxAmount", req.GetMaxAmount().GetValue())
	f.AcknowledgementStatus = acknowledgementFilter(&v, req.GetAcknowledgementStatus())
	return f, v.Err()
}

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

func optionalAmount(v *apperr.Violations, field, s string) *int64 {
	if s == "" {
		return nil
	}
	m, err := money.ParseMinor(s, "USD")
	if err != nil || m < 0 {
		v.Add(field, "'%s' must be an amount such as 100.00.", field)
		return nil
	}
	return &m
}

// filterKey fingerprints a list: a token is valid for the list it was made
// for, the same filters by value and the same page size (a page number
// means nothing with another). The pointer filters are dereferenced:
// formatted with %v, they printed their addresses, new on every request.
func filterKey(f store.OrderFilter, size int32) string {
	i64 := func(p *int64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	id := func(p *uuid.UUID) string {
		if p == nil {
			return ""
		}
		return p.String()
	}
	return paging.FilterKey(size, i64(f.ContactID), f.Status, f.LineKind, id(f.FundID), f.CampaignID, id(f.BatchID), id(f.ScheduleID),
		paging.TimeKey(f.From), paging.TimeKey(f.To), i64(f.MinAmount), i64(f.MaxAmount), f.AcknowledgementStatus)
}
