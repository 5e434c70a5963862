package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

type reportRun struct {
	Columns []struct {
		Key, Label, Type string
	} `json:"columns"`
	Rows          []map[string]json.RawMessage `json:"rows"`
	Totals        []map[string]json.RawMessage `json:"totals"`
	TotalCount    int                          `json:"totalCount"`
	Page          int                          `json:"page"`
	PageSize      int                          `json:"pageSize"`
	NextPageToken string                       `json:"nextPageToken"`
}

// cellText is a run cell as an export writes it: strings unquoted, numbers
// and amounts as their JSON literal, null as "".
func cellText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// TestReportsEndToEnd gives through the real API (names with commas,
// quotes and non-Latin letters, a partial refund, a void), then lists,
// runs, pages and exports a saved top-donors report in every format and
// compares each file with the run's rows.
func TestReportsEndToEnd(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	fund := c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	give := func(contact float64, amount float64) string {
		return c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, map[string]any{
			"contactId": contact, "currency": "USD",
			"donations": []any{map[string]any{"fundId": fund, "amount": amount}},
			"payments":  []any{map[string]any{"paymentMethod": "Cash", "amount": amount}},
		}).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	}
	contact := func(first, last string) float64 {
		return c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": first, "lastName": last}).
			Expect(t, http.StatusCreated).Map(t)["id"].(float64)
	}
	jane := contact("Jane", `O'Brien, "Jr"`)
	zoe := contact("Zoë", "王")
	bob := contact("Bob", "Smith")
	give(jane, 100)
	refunded := give(jane, 50)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", refunded, "/refunds"), tn.Key, map[string]any{"amount": 20}).Expect(t, http.StatusCreated)
	give(zoe, 75.5)
	voided := give(bob, 500)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", voided, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	give(bob, 10)

	types := c.Do(t, "GET", tPath(tn.ID, "/reports/types"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if n := len(types["items"].([]any)); n != 14 {
		t.Errorf("report types = %d, want 14", n)
	}

	// Validation: parameter property paths, unknown type.
	bad := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "x", "typeKey": "top-donors", "parameters": map[string]any{"From": "yesterday"}}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, bad); len(e["Parameters.From"]) == 0 {
		t.Errorf("errors = %v, want Parameters.From", e)
	}
	bad = c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "x", "typeKey": "nope"}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, bad); len(e["TypeKey"]) == 0 {
		t.Errorf("errors = %v, want TypeKey", e)
	}
	c.Do(t, "POST", tPath(tn.ID, "/reports/types/nope/run"), tn.Key, map[string]any{}).Expect(t, http.StatusNotFound)

	rep := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "Top donors, \"this\" year", "typeKey": "top-donors", "parameters": map[string]any{"Limit": 10}}).
		Expect(t, http.StatusCreated).Map(t)
	id := rep["id"].(string)
	list := c.Do(t, "GET", tPath(tn.ID, "/reports"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	want := map[string]any{"id": id, "name": "Top donors, \"this\" year", "dataSourceKey": "top-donors", "isShared": true}
	if items := list["items"].([]any); len(items) != 1 || !reflect.DeepEqual(items[0], want) {
		t.Errorf("list items = %v, want [%v]", items, want)
	}

	var run reportRun
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/run"), tn.Key, map[string]any{}).Expect(t, http.StatusOK).JSON(t, &run)
	if run.TotalCount != 3 || run.Page != 1 || run.PageSize != 50 || len(run.Rows) != 3 {
		t.Fatalf("run = %+v", run)
	}
	wantRows := [][]string{{"1", `Jane O'Brien, "Jr"`, "130.00"}, {"2", "Zoë 王", "75.50"}, {"3", "Bob Smith", "10.00"}}
	for i, w := range wantRows {
		got := []string{string(run.Rows[i]["Rank"]), cellText(t, run.Rows[i]["ContactName"]), string(run.Rows[i]["Amount"])}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("row %d = %v, want %v", i, got, w)
		}
	}
	if len(run.Totals) != 1 || string(run.Totals[0]["Amount"]) != "215.50" {
		t.Errorf("totals = %v", run.Totals)
	}

	// Pages: by number and by token, and a run-time override.
	var p1, p2, p3 reportRun
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/run?pageSize=2"), tn.Key, map[string]any{}).Expect(t, http.StatusOK).JSON(t, &p1)
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/run?pageSize=2&pageToken="+url.QueryEscape(p1.NextPageToken)), tn.Key, map[string]any{}).Expect(t, http.StatusOK).JSON(t, &p2)
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/run?pageSize=2&page=2"), tn.Key, map[string]any{}).Expect(t, http.StatusOK).JSON(t, &p3)
	if len(p1.Rows) != 2 || p1.NextPageToken == "" || len(p2.Rows) != 1 || p2.Page != 2 || p2.NextPageToken != "" || !reflect.DeepEqual(p2.Rows, p3.Rows) {
		t.Errorf("pages: %+v / %+v / %+v", p1, p2, p3)
	}
	var top1 reportRun
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/run"), tn.Key, map[string]any{"parameters": map[string]any{"Limit": 1}}).Expect(t, http.StatusOK).JSON(t, &top1)
	if top1.TotalCount != 1 {
		t.Errorf("override Limit=1: totalCount %d", top1.TotalCount)
	}

	// Exports, each parsed back and compared with the run.
	texts := make([][]string, 0, len(run.Rows))
	for _, r := range run.Rows {
		row := make([]string, len(run.Columns))
		for i, col := range run.Columns {
			row[i] = cellText(t, r[col.Key])
		}
		texts = append(texts, row)
	}
	labels := make([]string, len(run.Columns))
	for i, col := range run.Columns {
		labels[i] = col.Label
	}
	csvResp := c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/export?format=csv"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if ct := csvResp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("csv Content-Type %q", ct)
	}
	if cd := csvResp.Header.Get("Content-Disposition"); cd != `attachment; filename=top-donors-this-year.csv` {
		t.Errorf("csv Content-Disposition %q", cd)
	}
	recs, err := csv.NewReader(bytes.NewReader(csvResp.Body)).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v\n%s", err, csvResp.Body)
	}
	if !reflect.DeepEqual(recs[0], labels) || !reflect.DeepEqual(recs[1:4], texts) || recs[4][0] != "Total" || recs[4][5] != "215.50" {
		t.Errorf("csv = %q, want header %q rows %q", recs, labels, texts)
	}

	xl := c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/export?format=xlsx"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if ct := xl.Header.Get("Content-Type"); ct != "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" {
		t.Errorf("xlsx Content-Type %q", ct)
	}
	f, err := excelize.OpenReader(bytes.NewReader(xl.Body))
	if err != nil {
		t.Fatalf("xlsx: %v", err)
	}
	xrows, err := f.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(xrows[0], labels) || !reflect.DeepEqual(xrows[1:4], texts) {
		t.Errorf("xlsx = %q, want rows %q", xrows, texts)
	}

	pdf := c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/export?format=pdf"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if ct := pdf.Header.Get("Content-Type"); ct != "application/pdf" || !bytes.HasPrefix(pdf.Body, []byte("%PDF")) {
		t.Errorf("pdf Content-Type %q, starts %q", ct, pdf.Body[:min(8, len(pdf.Body))])
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Log("pdftotext missing (apt-get install poppler-utils): PDF text not checked")
	} else {
		path := filepath.Join(t.TempDir(), "r.pdf")
		if err := os.WriteFile(path, pdf.Body, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(t.Context(), "pdftotext", "-layout", path, "-").Output()
		if err != nil {
			t.Fatal(err)
		}
		text := string(out)
		for _, w := range []string{"Top donors, \"this\" year", "Tenant: " + tn.ID, "Jane O'Brien, \"Jr\"", "Zoë 王", "Bob Smith", "130.00", "75.50", "215.50", "Total", "page 1 of 1", "Generated:"} {
			if !strings.Contains(text, w) {
				t.Errorf("pdf text lacks %q:\n%s", w, text)
			}
		}
	}

	// Scopes and tenants.
	viewer := c.NewKey(t, tn.ID, "reports:view")
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/export?format=csv"), viewer, map[string]any{}).Expect(t, http.StatusForbidden)
	c.Do(t, "POST", tPath(tn.ID, "/reports"), viewer, map[string]any{"name": "x", "typeKey": "lybunt"}).Expect(t, http.StatusForbidden)
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/run"), viewer, map[string]any{}).Expect(t, http.StatusOK)
	c.Do(t, "PUT", tPath(tn.ID, "/reports/", id), viewer, map[string]any{"name": "x"}).Expect(t, http.StatusForbidden)
	c.Do(t, "DELETE", tPath(tn.ID, "/reports/", id), viewer, nil).Expect(t, http.StatusForbidden)
	// Without reports:view nothing of reports can be read or run.
	outsider := c.NewKey(t, tn.ID, "contacts:view", "reports:export")
	for _, r := range []struct{ method, path string }{
		{"GET", "/reports"}, {"GET", "/reports/types"}, {"GET", "/reports/" + id},
		{"POST", "/reports/" + id + "/run"}, {"POST", "/reports/types/lybunt/run"},
	} {
		var body any
		if r.method == "POST" {
			body = map[string]any{}
		}
		res := c.Do(t, r.method, tPath(tn.ID, r.path), outsider, body).Expect(t, http.StatusForbidden)
		if got := res.Map(t)["title"]; got != "Missing required permission: reports:view" {
			t.Errorf("%s %s: title %q", r.method, r.path, got)
		}
	}
	other := c.NewTenant(t)
	c.Do(t, "POST", tPath(other.ID, "/reports/", id, "/run"), other.Key, map[string]any{}).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(other.ID, "/reports/", id), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", tPath(tn.ID, "/reports/", id, "/export?format=doc"), tn.Key, map[string]any{}).Expect(t, http.StatusBadRequest)

	// Update and delete.
	upd := c.Do(t, "PUT", tPath(tn.ID, "/reports/", id), tn.Key, map[string]any{"name": "Renamed", "parameters": map[string]any{"Limit": 2}}).Expect(t, http.StatusOK).Map(t)
	if upd["name"] != "Renamed" || upd["parameters"].(map[string]any)["Limit"] != "2" {
		t.Errorf("update = %v", upd)
	}
	c.Do(t, "DELETE", tPath(tn.ID, "/reports/", id), tn.Key, nil).Expect(t, http.StatusNoContent)
	c.Do(t, "GET", tPath(tn.ID, "/reports/", id), tn.Key, nil).Expect(t, http.StatusNotFound)
}

// TestReportExportErrors checks that an export refused before its first
// byte is a problem document with the right status, like every other
// error, and never a half-made file: unknown format, bad parameter
// override, missing scope, another tenant's report, an unknown report and
// a PDF too large.
func TestReportExportErrors(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	id := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "Top", "typeKey": "top-donors"}).
		Expect(t, http.StatusCreated).Map(t)["id"].(string)
	viewer := c.NewKey(t, tn.ID, "reports:view")
	other := c.NewTenant(t)
	export := func(tid, rid, format string) string {
		return tPath(tid, "/reports/", rid, "/export?format="+format)
	}
	for _, tc := range []struct {
		name, path, key string
		body            any
		status          int
		errorKey        string
		title           string
	}{
		{name: "unknown format", path: export(tn.ID, id, "doc"), key: tn.Key, body: map[string]any{}, status: http.StatusBadRequest, errorKey: "Format"},
		{name: "bad override", path: export(tn.ID, id, "csv"), key: tn.Key, body: map[string]any{"parameters": map[string]any{"Limit": "many"}},
			status: http.StatusBadRequest, errorKey: "Parameters.Limit"},
		{name: "override out of range", path: export(tn.ID, id, "xlsx"), key: tn.Key, body: map[string]any{"parameters": map[string]any{"From": "2026-02-01", "To": "2026-01-01"}},
			status: http.StatusBadRequest, errorKey: "Parameters.To"},
		{name: "unknown parameter", path: export(tn.ID, id, "pdf"), key: tn.Key, body: map[string]any{"parameters": map[string]any{"Colour": "red"}},
			status: http.StatusBadRequest, errorKey: "Parameters.Colour"},
		{name: "missing scope", path: export(tn.ID, id, "csv"), key: viewer, body: map[string]any{}, status: http.StatusForbidden,
			title: "Missing required permission: reports:export"},
		{name: "other tenant's report", path: export(other.ID, id, "csv"), key: other.Key, body: map[string]any{}, status: http.StatusNotFound},
		{name: "unknown report", path: export(tn.ID, "0190b7a1-0000-7000-8000-000000000000", "csv"), key: tn.Key, body: map[string]any{}, status: http.StatusNotFound},
		{name: "malformed report id", path: export(tn.ID, "nope", "xlsx"), key: tn.Key, body: map[string]any{}, status: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(t, "POST", tc.path, tc.key, tc.body).Expect(t, tc.status)
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q, want application/problem+json; body %s", ct, r.Body)
			}
			if cd := r.Header.Get("Content-Disposition"); cd != "" {
				t.Errorf("Content-Disposition %q on an error", cd)
			}
			var p struct {
				Type, Title, Instance, TraceID string
				Status                         int
				Errors                         map[string][]string
			}
			r.JSON(t, &p)
			if p.Status != tc.status || p.Type == "" || p.Title == "" || p.TraceID == "" || p.Instance != strings.SplitN(tc.path, "?", 2)[0] {
				t.Errorf("problem = %+v, want status %d with type, title, traceId and instance", p, tc.status)
			}
			if tc.errorKey != "" && len(p.Errors[tc.errorKey]) == 0 {
				t.Errorf("errors = %v, want %s", p.Errors, tc.errorKey)
			}
			if tc.title != "" && p.Title != tc.title {
				t.Errorf("title = %q, want %q", p.Title, tc.title)
			}
		})
	}
}
