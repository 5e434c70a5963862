package imports

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/imports/parse"
	"github.com/almoner/almoner/services/imports/store"
)

// listStatuses are the statuses a client sees, the values of the status
// filter; uploading is internal (an upload in progress is never listed).
var listStatuses = []string{store.Queued, store.Validating, store.Importing, store.Succeeded, store.Failed}

// listCursor is the keyset token of the import list: the sort key of the
// last import served, the page it leads to, the filters and page size it
// was made for, and the total counted when the listing started (as the
// orders and contacts lists carry theirs, so a client walking every page
// counts once).
type listCursor struct {
	CreatedAt time.Time `json:"c"`
	After     uuid.UUID `json:"a"`
	paging.Position
}

// ListImports returns a page of the tenant's imports, newest first: the
// filters are read, a page token is checked against them, the page is
// read by keyset (after a token) or offset, and the next token made.
func (a *server) ListImports(ctx context.Context, req *importsv1.ListImportsRequest) (*importsv1.ListImportsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, req.GetPageToken(), paging.Standard)
	if err != nil {
		return nil, err
	}
	f, err := listFilter(req)
	if err != nil {
		return nil, err
	}
	key := filterKey(f, pg.Size)
	var tok listCursor
	resumed, carried, err := paging.Resume(&pg, key, &tok)
	if err != nil {
		return nil, err
	}
	var after *store.Cursor
	if resumed {
		after = &store.Cursor{CreatedAt: tok.CreatedAt, ID: tok.After}
	}
	list, total, err := a.s.store.List(ctx, p.Tenant(), f, pg.Size, pg.Offset(), after, resumed)
	if err != nil {
		return nil, err
	}
	if resumed {
		total = carried
	}
	out := &importsv1.ListImportsResponse{Items: make([]*importsv1.Import, 0, len(list)), TotalCount: total, Page: pg.Number, PageSize: pg.Size}
	for _, m := range list {
		out.Items = append(out.Items, toImport(m))
	}
	if len(list) == int(pg.Size) && int64(pg.Number)*int64(pg.Size) < total {
		last := list[len(list)-1]
		out.NextPageToken = paging.EncodeToken(listCursor{CreatedAt: last.CreatedAt, After: last.ID, Position: paging.Position{Page: pg.Number + 1, Filter: key, Total: total}})
	}
	return out, nil
}

// listFilter reads the list's query filters; every unreadable one is a
// violation under its name (Status[i] for a status of the list).
func listFilter(req *importsv1.ListImportsRequest) (store.ListFilter, error) {
	var v apperr.Violations
	var f store.ListFilter
	for i, s := range req.GetStatus() {
		st := normalize.OneOf(listStatuses, s)
		if st == "" {
			v.Add(fmt.Sprintf("Status[%d]", i), "'Status' must be one of %s.", strings.Join(listStatuses, ", "))
			continue
		}
		if !slices.Contains(f.Statuses, st) {
			f.Statuses = append(f.Statuses, st)
		}
	}
	slices.Sort(f.Statuses)
	if s := req.GetKind(); s != "" {
		if f.Kind = normalize.OneOf([]string{parse.KindContacts, parse.KindGifts}, s); f.Kind == "" {
			v.Add("Kind", "'Kind' must be contacts or gifts.")
		}
	}
	f.From, f.To = paging.TimeBound(&v, "CreatedFrom", req.GetCreatedFrom()), paging.TimeBound(&v, "CreatedTo", req.GetCreatedTo())
	return f, v.Err()
}

// filterKey fingerprints a list: a token is valid for the list it was made
// for, the same filters by value and the same page size (a page number
// means nothing with another).
func filterKey(f store.ListFilter, size int32) string {
	return paging.FilterKey(size, strings.Join(f.Statuses, ","), f.Kind, paging.TimeKey(f.From), paging.TimeKey(f.To))
}
