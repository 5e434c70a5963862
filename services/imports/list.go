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
	list, total, next, err := paging.Keyset(&pg, key,
		func(after *listCursor, count bool) ([]store.Import, int64, error) {
			var c *store.Cursor
			if after != nil {
				c = &store.Cursor{CreatedAt: after.CreatedAt, ID: after.After}
			}
			return a.s.store.List(ctx, p.Tenant(), f, pg.Size, pg.Offset(), c, !count)
		},
		func(last store.Import) listCursor { return listCursor{CreatedAt: last.CreatedAt, After: last.ID} })
	if err != nil {
		return nil, err
	}
	return &importsv1.ListImportsResponse{Items: paging.Convert(list, toImport), TotalCount: total, Page: pg.Number, PageSize: pg.Size, NextPageToken: next}, nil
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
