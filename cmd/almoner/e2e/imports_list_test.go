package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// importPage is one page of GET …/imports.
type importPage struct {
	Items         []json.RawMessage `json:"items"`
	TotalCount    int               `json:"totalCount"`
	Page          int               `json:"page"`
	PageSize      int               `json:"pageSize"`
	NextPageToken string            `json:"nextPageToken"`
}

// listImports reads one page of the tenant's imports with the query.
func listImports(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, query string) importPage {
	t.Helper()
	var p importPage
	c.Do(t, "GET", importsPath(tn.ID, "?"+query), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
	return p
}

// importIDs are the ids of a page's items.
func importIDs(t *testing.T, items []json.RawMessage) []string {
	t.Helper()
	out := make([]string, 0, len(items))
	for _, raw := range items {
		var m struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.ID)
	}
	return out
}

// walkImports follows nextPageToken from the first page of the query to
// the last, and returns every import id in the order served; each page
// must report the total of the listing and its own number.
func walkImports(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, query string) ([]string, []importPage) {
	t.Helper()
	var ids []string
	var pages []importPage
	q := query
	for n := 1; ; n++ {
		p := listImports(t, c, tn, q)
		if p.Page != n {
			t.Errorf("%s: page %d reports page %d", query, n, p.Page)
		}
		pages = append(pages, p)
		ids = append(ids, importIDs(t, p.Items)...)
		if p.NextPageToken == "" {
			if len(ids) != p.TotalCount {
				t.Errorf("%s: %d imports over %d pages, totalCount %d", query, len(ids), n, p.TotalCount)
			}
			return ids, pages
		}
		if n > 50 {
			t.Fatalf("%s: more than 50 pages", query)
		}
		q = query + "&pageToken=" + url.QueryEscape(p.NextPageToken)
	}
}

// TestImportList lists a tenant's imports through the gateway: the
// samples of docs/imports.md and a file that fails, newest first, every
// import once across pages by token, page 2 by number the same as by
// token, each item what GET …/imports/{importId} answers, the filters
// (status, kind, createdFrom/createdTo), never another tenant's import;
// another tenant's path is a 404, a key without imports:manage a 403, a
// bad filter a 400 under its name.
func TestImportList(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	other := c.NewTenant(t)
	for _, name := range []string{"General", "Building Fund"} {
		c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": name}).Expect(t, http.StatusCreated)
	}
	started := time.Now().UTC().Add(-time.Second)

	// Uploaded one after another, each ended before the next: the list
	// has them newest first, the reverse of this order.
	var uploaded []string
	kinds := map[string]string{}
	statuses := map[string]string{}
	for _, f := range []struct{ file, query string }{
		{"contacts.csv", "kind=contacts&format=csv"},
		{"contacts.jsonl", "kind=contacts&format=jsonl"},
		{"gifts.csv", "kind=gifts&format=csv"},
		{"", "kind=contacts&format=csv"}, // fails: unknown columns
		{"gifts.jsonl", "kind=gifts&format=jsonl"},
	} {
		file := []byte("firstName,shoeSize\nAda,38\n")
		if f.file != "" {
			file = readExample(t, f.file)
		}
		m := importFile(t, c, tn, f.query, file)
		id := m["id"].(string)
		uploaded = append(uploaded, id)
		kinds[id], statuses[id] = m["kind"].(string), m["status"].(string)
	}
	otherImport := importFile(t, c, other, "kind=contacts&format=csv", readExample(t, "contacts.csv"))["id"].(string)
	newest := slices.Clone(uploaded)
	slices.Reverse(newest)
	failed := 0
	for _, s := range statuses {
		if s == "failed" {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed imports, want 1: %v", failed, statuses)
	}

	// Every import once, newest first, in pages of 2 by token.
	ids, pages := walkImports(t, c, tn, "pageSize=2")
	if !slices.Equal(ids, newest) {
		t.Errorf("by token: %v\nwant %v", ids, newest)
	}
	if len(pages) != 3 || pages[0].TotalCount != 5 || pages[2].TotalCount != 5 || len(pages[2].Items) != 1 {
		t.Errorf("pages %+v, want 2, 2 and 1 of 5", pages)
	}
	// Page 2 by number is page 2 by token.
	byNumber := listImports(t, c, tn, "page=2&pageSize=2")
	if !slices.Equal(importIDs(t, byNumber.Items), importIDs(t, pages[1].Items)) || byNumber.Page != 2 || byNumber.TotalCount != 5 {
		t.Errorf("page 2 by number %+v, by token %+v", byNumber, pages[1])
	}
	// Each item is the import GET …/imports/{importId} answers.
	for _, raw := range listImports(t, c, tn, "").Items {
		var listed map[string]any
		if err := json.Unmarshal(raw, &listed); err != nil {
			t.Fatal(err)
		}
		got := c.Do(t, "GET", importsPath(tn.ID, "/", listed["id"].(string)), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if fmt.Sprint(got) != fmt.Sprint(listed) {
			t.Errorf("listed %v\nGET answers %v", listed, got)
		}
	}

	// The filters, each walked in pages of 2.
	keep := func(cond func(id string) bool) []string {
		var out []string
		for _, id := range newest {
			if cond(id) {
				out = append(out, id)
			}
		}
		return out
	}
	from := url.QueryEscape(started.Format(time.RFC3339))
	for _, f := range []struct {
		query string
		want  []string
	}{
		{"status=failed", keep(func(id string) bool { return statuses[id] == "failed" })},
		{"status=succeeded", keep(func(id string) bool { return statuses[id] == "succeeded" })},
		{"status=succeeded,failed", newest},
		{"status=succeeded&status=failed", newest},
		{"status=queued,validating,importing", nil},
		{"kind=gifts", keep(func(id string) bool { return kinds[id] == "gifts" })},
		{"kind=contacts&status=succeeded", keep(func(id string) bool { return kinds[id] == "contacts" && statuses[id] == "succeeded" })},
		{"createdFrom=" + from, newest},
		{"createdFrom=" + started.Format(time.DateOnly), newest},
		{"createdTo=" + from, nil},
		{"createdFrom=" + from + "&createdTo=" + url.QueryEscape(time.Now().UTC().Add(time.Hour).Format(time.RFC3339)) + "&kind=contacts", keep(func(id string) bool { return kinds[id] == "contacts" })},
	} {
		got, _ := walkImports(t, c, tn, f.query+"&pageSize=2")
		if !slices.Equal(got, f.want) {
			t.Errorf("%s: %v\nwant %v", f.query, got, f.want)
		}
	}
	if n := len(keep(func(id string) bool { return kinds[id] == "gifts" })); n != 2 {
		t.Errorf("%d gift imports, want 2", n)
	}

	// Another tenant's imports are its own.
	if got, _ := walkImports(t, c, other, "pageSize=2"); !slices.Equal(got, []string{otherImport}) {
		t.Errorf("the other tenant lists %v, want only %s", got, otherImport)
	}
	// Another tenant's path: 404 before any handler, as on every route.
	expectProblem(t, c.Do(t, "GET", importsPath(other.ID), tn.Key, nil), http.StatusNotFound)
	expectProblem(t, c.Do(t, "GET", importsPath(tn.ID, "?status=failed"), other.Key, nil), http.StatusNotFound)

	// A key without imports:manage.
	noScope := c.NewKey(t, tn.ID, "contacts:view", "donations:view")
	if p := expectProblem(t, c.Do(t, "GET", importsPath(tn.ID), noScope, nil), http.StatusForbidden); p.Title != "Missing required permission: imports:manage" {
		t.Errorf("403 title %q", p.Title)
	}

	// Bad filters and paging, each a validation problem under its name.
	tok := listImports(t, c, tn, "pageSize=2").NextPageToken
	for _, bad := range []struct{ query, field string }{
		{"status=uploading", "Status[0]"},
		{"status=succeeded,done", "Status[1]"},
		{"kind=donors", "Kind"},
		{"createdFrom=yesterday", "CreatedFrom"},
		{"createdTo=2026-02-30", "CreatedTo"},
		{"page=0", "Page"},
		{"pageSize=101", "PageSize"},
		{"pageToken=xyz", "PageToken"},
		{"pageSize=2&kind=gifts&pageToken=" + url.QueryEscape(tok), "PageToken"},
		{"statuss=failed", "Statuss"},
	} {
		p := expectProblem(t, c.Do(t, "GET", importsPath(tn.ID, "?"+bad.query), tn.Key, nil), http.StatusBadRequest)
		if len(p.Errors[bad.field]) == 0 || !strings.HasSuffix(p.Type, "/validation") || p.Title != "One or more validation errors occurred." {
			t.Errorf("%s: %+v, want a validation problem under %s", bad.query, p, bad.field)
		}
	}
}
