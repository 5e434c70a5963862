package imports

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/imports/store"
)

// list calls ListImports as the fixture's tenant.
func (f *fixture) list(t *testing.T, req *importsv1.ListImportsRequest) *importsv1.ListImportsResponse {
	t.Helper()
	req.TenantId = f.tenant.String()
	resp, err := f.client.ListImports(as(context.Background(), f.tenant), req)
	if err != nil {
		t.Fatalf("list imports %v: %v", req, err)
	}
	return resp
}

// walk reads every page of a listing by token, checking each envelope.
func (f *fixture) walk(t *testing.T, req *importsv1.ListImportsRequest) []string {
	t.Helper()
	var ids []string
	for page := int32(1); ; page++ {
		resp := f.list(t, req)
		if resp.GetPage() != page || resp.GetPageSize() != req.GetPageSize() {
			t.Fatalf("page %d: envelope page %d, pageSize %d", page, resp.GetPage(), resp.GetPageSize())
		}
		for _, m := range resp.GetItems() {
			ids = append(ids, m.GetId())
		}
		if resp.GetNextPageToken() == "" {
			if int64(len(ids)) != resp.GetTotalCount() {
				t.Errorf("walked %d imports, totalCount %d", len(ids), resp.GetTotalCount())
			}
			return ids
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// newestFirst reads the tenant's listable imports from the table, in the
// list's order.
func (f *fixture) newestFirst(t *testing.T, tenant uuid.UUID, where string) []string {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT id::text FROM imports.imports
		WHERE tenant_id = $1 AND status <> 'uploading' AND `+where+` ORDER BY created_at DESC, id DESC`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// violations returns the fields of an InvalidArgument's violations.
func violations(err error) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

// TestListImports: the tenant's imports newest first, each as GetImport
// reads it, every one once across pages by token, the same pages by
// number; the filters; an upload still arriving and another tenant's
// imports never listed.
func TestListImports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	var contacts, gifts []string
	for range 3 {
		contacts = append(contacts, f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\n"))
	}
	f.runAll(t, "runner-a") // the three succeed
	for range 2 {
		gifts = append(gifts, f.mustUpload(t, header(f.tenant, "gifts", "jsonl"), `{"contactId": 1, "date": "2026-05-01", "amount": 5}`+"\n"))
	}
	// An upload in progress, and another tenant's import.
	if _, err := f.svc.store.BeginUpload(context.Background(), store.Import{TenantID: f.tenant, ID: uuid.Must(uuid.NewV7()),
		Kind: "contacts", Format: "csv", Duplicates: "skip", Actor: "test"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	other := uuid.New()
	if _, err := f.upload(as(context.Background(), other), header(other, "contacts", "csv"), "lastName\nB\n", 100); err != nil {
		t.Fatal(err)
	}

	all := f.newestFirst(t, f.tenant, "true")
	if len(all) != 5 {
		t.Fatalf("%d listable imports in the table, want 5", len(all))
	}
	if got := f.walk(t, &importsv1.ListImportsRequest{PageSize: ptr(int32(2))}); !slices.Equal(got, all) {
		t.Errorf("by token: %v, want %v", got, all)
	}
	for page := int32(1); page <= 3; page++ {
		resp := f.list(t, &importsv1.ListImportsRequest{Page: ptr(page), PageSize: ptr(int32(2))})
		var got []string
		for _, m := range resp.GetItems() {
			got = append(got, m.GetId())
		}
		if want := all[2*(page-1) : min(2*page, 5)]; !slices.Equal(got, want) || resp.GetTotalCount() != 5 {
			t.Errorf("page %d by number: %v of %d, want %v of 5", page, got, resp.GetTotalCount(), want)
		}
	}
	// Each item is the import GetImport reads.
	first := f.list(t, &importsv1.ListImportsRequest{}).GetItems()
	for _, m := range first {
		if got := f.get(t, m.GetId()); got.String() != m.String() {
			t.Errorf("listed %v, GetImport reads %v", m, got)
		}
	}
	if first[len(first)-1].GetStatus() != "succeeded" || first[0].GetStatus() != "queued" || first[0].GetKind() != "gifts" {
		t.Errorf("newest first: first %v, last %v", first[0], first[len(first)-1])
	}

	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name string
		req  *importsv1.ListImportsRequest
		want []string
	}{
		{"status", &importsv1.ListImportsRequest{Status: []string{"succeeded"}}, f.newestFirst(t, f.tenant, "status = 'succeeded'")},
		{"two statuses", &importsv1.ListImportsRequest{Status: []string{"Queued", " succeeded"}}, all},
		{"status none has", &importsv1.ListImportsRequest{Status: []string{"failed"}}, nil},
		{"kind", &importsv1.ListImportsRequest{Kind: "gifts"}, f.newestFirst(t, f.tenant, "kind = 'gifts'")},
		{"kind and status", &importsv1.ListImportsRequest{Kind: "contacts", Status: []string{"queued"}}, nil},
		{"created from a date", &importsv1.ListImportsRequest{CreatedFrom: time.Now().UTC().Format(time.DateOnly)}, all},
		{"created from later", &importsv1.ListImportsRequest{CreatedFrom: soon}, nil},
		{"created before later", &importsv1.ListImportsRequest{CreatedTo: soon, PageSize: ptr(int32(1))}, all},
		{"created before a date", &importsv1.ListImportsRequest{CreatedTo: "2020-01-01"}, nil},
	} {
		if c.req.PageSize == nil {
			c.req.PageSize = ptr(int32(2))
		}
		if got := f.walk(t, c.req); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if n := len(f.newestFirst(t, f.tenant, "status = 'succeeded'")); n != 3 {
		t.Errorf("%d succeeded, want 3", n)
	}
	if got := f.newestFirst(t, f.tenant, "kind = 'gifts'"); len(got) != 2 || !slices.Contains(got, gifts[0]) || !slices.Contains(got, gifts[1]) {
		t.Errorf("gifts %v, want %v", got, gifts)
	}
	if got, err := f.client.ListImports(as(context.Background(), other), &importsv1.ListImportsRequest{TenantId: other.String()}); err != nil ||
		len(got.GetItems()) != 1 || got.GetTotalCount() != 1 || slices.Contains(append(slices.Clone(contacts), gifts...), got.GetItems()[0].GetId()) {
		t.Errorf("the other tenant's list: %v %v", got, err)
	}
}

// TestListImportsRefusals: the scope, another tenant, and each bad filter
// or token under its name.
func TestListImportsRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	for range 3 {
		f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\n")
	}
	tenant := f.tenant.String()
	if _, err := f.client.ListImports(as(context.Background(), f.tenant, scopes.ContactsView), &importsv1.ListImportsRequest{TenantId: tenant}); code(err) != codes.PermissionDenied {
		t.Errorf("without imports:manage: %v", err)
	}
	if _, err := f.client.ListImports(as(context.Background(), uuid.New()), &importsv1.ListImportsRequest{TenantId: tenant}); code(err) != codes.NotFound {
		t.Errorf("another tenant's key: %v", err)
	}
	tok := f.list(t, &importsv1.ListImportsRequest{PageSize: ptr(int32(1))}).GetNextPageToken()
	if tok == "" {
		t.Fatal("no token after page 1 of 3")
	}
	for _, c := range []struct {
		name string
		req  *importsv1.ListImportsRequest
		want []string
	}{
		{"uploading", &importsv1.ListImportsRequest{Status: []string{"queued", "uploading"}}, []string{"Status[1]"}},
		{"unknown status", &importsv1.ListImportsRequest{Status: []string{"done"}}, []string{"Status[0]"}},
		{"kind", &importsv1.ListImportsRequest{Kind: "donors"}, []string{"Kind"}},
		{"dates", &importsv1.ListImportsRequest{CreatedFrom: "yesterday", CreatedTo: "2026-02-30"}, []string{"CreatedFrom", "CreatedTo"}},
		{"page", &importsv1.ListImportsRequest{Page: ptr(int32(0))}, []string{"Page"}},
		{"page size", &importsv1.ListImportsRequest{PageSize: ptr(int32(101))}, []string{"PageSize"}},
		{"token", &importsv1.ListImportsRequest{PageToken: "xyz"}, []string{"PageToken"}},
		{"token of another filter", &importsv1.ListImportsRequest{PageSize: ptr(int32(1)), Kind: "gifts", PageToken: tok}, []string{"PageToken"}},
		{"token of another page size", &importsv1.ListImportsRequest{PageSize: ptr(int32(2)), PageToken: tok}, []string{"PageToken"}},
	} {
		c.req.TenantId = tenant
		_, err := f.client.ListImports(as(context.Background(), f.tenant), c.req)
		if got := violations(err); code(err) != codes.InvalidArgument || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v (fields %v), want InvalidArgument under %v", c.name, err, got, c.want)
		}
	}
}

// TestListImportsStableUnderInserts: imports queued while a client pages
// by token, and imports sharing one createdAt, neither repeat nor hide an
// import of the listing; the total stays the one counted at its start.
func TestListImportsStableUnderInserts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	for range 7 {
		f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\n")
	}
	// Four of them share one instant: the id orders them.
	if _, err := f.pool.Exec(context.Background(), `UPDATE imports.imports SET created_at = date_trunc('second', now())
		WHERE id IN (SELECT id FROM imports.imports WHERE tenant_id = $1 ORDER BY id LIMIT 4)`, f.tenant); err != nil {
		t.Fatal(err)
	}
	before := f.newestFirst(t, f.tenant, "true")
	req := &importsv1.ListImportsRequest{TenantId: f.tenant.String(), PageSize: ptr(int32(2))}
	var got []string
	for page := 1; ; page++ {
		resp := f.list(t, req)
		if resp.GetTotalCount() != 7 {
			t.Errorf("page %d: totalCount %d, want the 7 counted when the listing started", page, resp.GetTotalCount())
		}
		for _, m := range resp.GetItems() {
			got = append(got, m.GetId())
		}
		// New imports arrive between pages.
		f.mustUpload(t, header(f.tenant, "gifts", "csv"), "contactId,date,amount\n1,2026-05-01,5\n")
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if !slices.Equal(got, before) {
		t.Errorf("listed %v\nwant     %v (each import of the listing once, in order)", got, before)
	}
	if n := len(f.newestFirst(t, f.tenant, "true")); n != 11 {
		t.Errorf("%d imports after the walk, want 11", n)
	}
	if got := strings.Join(f.walk(t, &importsv1.ListImportsRequest{PageSize: ptr(int32(3))}), ","); got != strings.Join(f.newestFirst(t, f.tenant, "true"), ",") {
		t.Errorf("a new listing: %s", got)
	}
}
