package imports

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
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
	Page      int32     `json:"p"`
	Filter    string    `json:"f"`
	Total     int64     `json:"n"`
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
	after, carried, err := resumeList(&pg, key)
	if err != nil {
		return nil, err
	}
	list, total, err := a.s.store.List(ctx, uuid.MustParse(p.TenantID), f, pg.Size, pg.Offset(), after, after != nil)
	if err != nil {
		return nil, err
	}
	if after != nil {
		total = carried
	}
	out := &importsv1.ListImportsResponse{Items: make([]*importsv1.Import, 0, len(list)), TotalCount: total, Page: pg.Number, PageSize: pg.Size}
	for _, m := range list {
		out.Items = append(out.Items, toImport(m))
	}
	if len(list) == int(pg.Size) && int64(pg.Number)*int64(pg.Size) < total {
		last := list[len(list)-1]
		out.NextPageToken = paging.EncodeToken(listCursor{CreatedAt: last.CreatedAt, After: last.ID, Page: pg.Number + 1, Filter: key, Total: total})
	}
	return out, nil
}

// listFilter reads the list's query filters; every unreadable one is a
// violation under its name (Status[i] for a status of the list).
func listFilter(req *importsv1.ListImportsRequest) (store.ListFilter, error) {
	var v apperr.Violations
	var f store.ListFilter
	for i, s := range req.GetStatus() {
		st := canonical(listStatuses, s)
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
		if f.Kind = canonical([]string{parse.KindContacts, parse.KindGifts}, s); f.Kind == "" {
			v.Add("Kind", "'Kind' must be contacts or gifts.")
		}
	}
	f.From, f.To = optionalTime(&v, "CreatedFrom", req.GetCreatedFrom()), optionalTime(&v, "CreatedTo", req.GetCreatedTo())
	return f, v.Err()
}

// canonical returns the member of set equal to s ignoring case and the
// spaces around it, or "".
func canonical(set []string, s string) string {
	s = strings.TrimSpace(s)
	for _, m := range set {
		if strings.EqualFold(m, s) {
			return m
		}
	}
	return ""
}

// optionalTime reads a date (midnight UTC) or an RFC 3339 time; "" is no
// bound.
func optionalTime(v *apperr.Violations, field, s string) *time.Time {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t
		}
	}
	v.Add(field, "'%s' must be a date (2026-04-12) or an RFC 3339 time.", field)
	return nil
}

// filterKey fingerprints a list: a token is valid for the list it was made
// for, the same filters by value and the same page size (a page number
// means nothing with another).
func filterKey(f store.ListFilter, size int32) string {
	at := func(p *time.Time) string {
		if p == nil {
			return ""
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join([]string{
		strings.Join(f.Statuses, ","), f.Kind, at(f.From), at(f.To), fmt.Sprint(size),
	}, "\x00"))))[:16]
}

// resumeList reads a page token: where the keyset page starts, its page
// number (set in pg) and the total counted when the listing started.
func resumeList(pg *paging.Page, key string) (*store.Cursor, int64, error) {
	if pg.Token == nil {
		return nil, 0, nil
	}
	var c listCursor
	if err := paging.DecodeToken(pg.Token, &c); err != nil {
		return nil, 0, err
	}
	if c.Filter != key || c.Page < 2 || c.Total < 0 {
		return nil, 0, apperr.Invalid(apperr.Violation{Field: "PageToken",
			Message: "'PageToken' was made for other filters or another page size; send the same ones, or start again without it."})
	}
	pg.Number = c.Page
	return &store.Cursor{CreatedAt: c.CreatedAt, ID: c.After}, c.Total, nil
}
