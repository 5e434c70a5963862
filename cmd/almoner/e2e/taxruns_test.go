package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestTaxStatementRun queues a year-end run through the gateway, follows
// it to the end, downloads its ZIP (one PDF per donor, named by statement
// number, read back with pdftotext) and CSV, and checks the scope, the
// other tenant, validation and the run's events.
func TestTaxStatementRun(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	names := []string{"Åsa Lindqvist", "Jean-Éric Dubois", "Small Giver"}
	amounts := []float64{120, 45.5, 2}
	var ids []float64
	for i, n := range names {
		first, last, _ := strings.Cut(n, " ")
		id := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": first, "lastName": last,
			"emails": []any{map[string]any{"emailAddress": fmt.Sprintf("donor%d@example.org", i), "emailType": "Personal", "isPrimary": true}}}).
			Expect(t, http.StatusCreated).Map(t)["id"].(float64)
		ids = append(ids, id)
		b := f.cashOrder(amounts[i])
		b["contactId"] = id
		c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusCreated)
	}
	year := time.Now().In(mustLoc(t, "America/New_York")).Year()

	runs := tPath(tn.ID, "/tax-statements/runs")
	e := errorsOf(t, c.Do(t, "POST", runs, tn.Key, map[string]any{"year": 1899, "minimumAmount": -1}).Expect(t, http.StatusBadRequest))
	if len(e["Year"]) == 0 || len(e["MinimumAmount"]) == 0 {
		t.Errorf("errors %v", e)
	}
	queued := c.Do(t, "POST", runs, tn.Key, map[string]any{"year": year, "minimumAmount": 5}).Expect(t, http.StatusAccepted).Map(t)
	if queued["status"] != "queued" || queued["id"] == "" {
		t.Fatalf("queued run %v", queued)
	}
	runPath := runs + "/" + queued["id"].(string)
	var run map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		run = c.Do(t, "GET", runPath, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if run["status"] == "succeeded" || run["status"] == "failed" || time.Now().After(deadline) {
			break
		}
	}
	// The fixture's own contact has no gift; Small Giver is below 5.00.
	if run["status"] != "succeeded" || run["processed"] != float64(2) || run["total"] != float64(2) || run["startedAt"] == nil || run["finishedAt"] == nil {
		t.Fatalf("run %v", run)
	}

	csvResp := c.Do(t, "GET", runPath+"/download?format=csv", tn.Key, nil).Expect(t, http.StatusOK)
	recs, err := csv.NewReader(bytes.NewReader(csvResp.Body)).ReadAll()
	if err != nil || len(recs) != 3 || strings.Join(recs[0], "|") != "Statement number|Contact ID|Name|Email|Address|Gift count|Total|Deductible" {
		t.Fatalf("csv %q, %v", csvResp.Body, err)
	}
	if recs[1][1] != fmt.Sprint(int64(ids[0])) || recs[1][2] != "Åsa Lindqvist" || recs[1][3] != "donor0@example.org" || recs[1][5] != "1" ||
		recs[1][6] != "USD 120.00" || recs[1][7] != "USD 120.00" || recs[2][2] != "Jean-Éric Dubois" || recs[2][6] != "USD 45.50" {
		t.Errorf("csv rows %q", recs[1:])
	}

	zipResp := c.Do(t, "GET", runPath+"/download?format=zip", tn.Key, nil).Expect(t, http.StatusOK)
	if ct := zipResp.Header.Get("Content-Type"); ct != "application/zip" {
		t.Errorf("Content-Type %q", ct)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipResp.Body), int64(len(zipResp.Body)))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, zf := range zr.File {
		files = append(files, zf.Name)
	}
	sort.Strings(files)
	if want := []string{recs[1][0] + ".pdf", recs[2][0] + ".pdf"}; strings.Join(files, ",") != strings.Join(want, ",") && strings.Join(files, ",") != want[1]+","+want[0] {
		t.Errorf("zip files %v, want %v", files, want)
	}
	checkZipPDF(t, zr.File[0], "Giving statement", "Åsa Lindqvist", recs[1][0])

	// Events, scope, other tenant.
	if n := auditCount(t, c, tn.ID, queued["id"].(string)); n != 3 {
		t.Errorf("%d audit rows for the run, want 3 (created, running, succeeded)", n)
	}
	noScope := c.NewKey(t, tn.ID, "donations:view", "reports:export")
	c.Do(t, "POST", runs, noScope, map[string]any{"year": year}).Expect(t, http.StatusForbidden)
	c.Do(t, "GET", runPath, noScope, nil).Expect(t, http.StatusForbidden)
	c.Do(t, "GET", runPath+"/download?format=csv", noScope, nil).Expect(t, http.StatusForbidden)
	other := c.NewTenant(t)
	c.Do(t, "GET", tPath(other.ID, "/tax-statements/runs/", queued["id"].(string)), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(other.ID, "/tax-statements/runs/", queued["id"].(string), "/download"), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", runPath, other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", runPath+"/download?format=pdf", tn.Key, nil).Expect(t, http.StatusBadRequest)
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// checkZipPDF reads one PDF of the ZIP back with pdftotext.
func checkZipPDF(t *testing.T, zf *zip.File, wants ...string) {
	t.Helper()
	rc, err := zf.Open()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || !bytes.HasPrefix(b, []byte("%PDF")) {
		t.Fatalf("%s: %v, starts %q", zf.Name, err, b[:min(8, len(b))])
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext missing (apt-get install poppler-utils): PDF text not checked")
	}
	file := filepath.Join(t.TempDir(), "s.pdf")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "pdftotext", "-layout", file, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	text := strings.Join(strings.Fields(string(out)), " ")
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", zf.Name, w, text)
		}
	}
}

// TestTaxStatementRunResumesAfterKill makes a run of 2,001 donors in a
// reports replica (a child process, 5 donors a batch, 2 s lease), kills it
// with SIGKILL mid-way, and lets two fresh replicas finish it: the run
// succeeds with every donor once (one statement issued per donor, one CSV
// row each), none skipped.
func TestTaxStatementRunResumesAfterKill(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_TAX_RUNNER": "false"}})
	f := newOrderFixture(t, c)
	tn := f.tn
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	model := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(10)).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	loadDonors(t, c, tn.ID, model, 2000)

	env := []string{"DATABASE_URL=" + c.DatabaseURL, "ALMONER_AUTH_ADDR=" + c.ServiceAddr("auth"), "ALMONER_METRICS_ADDR=off", "ALMONER_HTTP_ADDR=",
		"ALMONER_TAX_RUNNER=true", "ALMONER_TAX_RUN_BATCH=5", "ALMONER_TAX_RUN_LEASE=2s"}
	for k, v := range c.Settings {
		if k != "ALMONER_TAX_RUNNER" {
			env = append(env, k+"="+v)
		}
	}
	start := func() *apptest.Child {
		return apptest.StartChild(t, "reports", append(env, "ALMONER_GRPC_ADDR=127.0.0.1:0")...) // a port of its own when it listens: nothing dials it
	}
	year := time.Now().In(mustLoc(t, "America/New_York")).Year()
	runID := c.Do(t, "POST", tPath(tn.ID, "/tax-statements/runs"), tn.Key, map[string]any{"year": year}).Expect(t, http.StatusAccepted).Map(t)["id"].(string)
	runPath := tPath(tn.ID, "/tax-statements/runs/", runID)
	poll := func(done func(map[string]any) bool) map[string]any {
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			run := c.Do(t, "GET", runPath, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
			if done(run) || time.Now().After(deadline) {
				return run
			}
		}
	}

	// Queued (no replica runs it yet): nothing to download.
	if r := c.Do(t, "GET", runPath+"/download", tn.Key, nil).Expect(t, http.StatusConflict); !strings.Contains(string(r.Body), "TaxStatementRun.NotFinished") {
		t.Errorf("download of a queued run: %s", r.Body)
	}
	victim := start()
	run := poll(func(r map[string]any) bool { p, _ := r["processed"].(float64); return p >= 100 })
	if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if run["status"] != "running" {
		t.Fatalf("before the kill: %v (the run must still be going for the test to mean anything)", run)
	}
	start()
	start()
	run = poll(func(r map[string]any) bool { return r["status"] == "succeeded" || r["status"] == "failed" })
	if run["status"] != "succeeded" || run["processed"] != float64(2001) || run["total"] != float64(2001) {
		t.Fatalf("after the kill: %v", run)
	}
	recs, err := csv.NewReader(bytes.NewReader(c.Do(t, "GET", runPath+"/download?format=csv", tn.Key, nil).Expect(t, http.StatusOK).Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		if seen[r[1]] {
			t.Errorf("contact %s twice", r[1])
		}
		seen[r[1]] = true
	}
	if len(seen) != 2001 {
		t.Errorf("%d donors in the CSV, want 2001", len(seen))
	}
	var issued int
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_type = 'StatementDocument'`, tn.ID).Scan(&issued); err != nil {
		t.Fatal(err)
	}
	if issued != 2001 {
		t.Errorf("%d statements issued, want 2001 (one per donor, none made twice)", issued)
	}
}

// loadDonors adds n contacts of the tenant, each with a copy of the model
// order (ids, numbers and contact changed), in SQL: through the API it
// would take minutes.
func loadDonors(t *testing.T, c *apptest.Cluster, tenantID, model string, n int) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name)
			SELECT $1, 500000 + g, 'Individual', 'Donor', 'Number ' || g FROM generate_series(1, $3::int) g WHERE $2::uuid IS NOT NULL`,
		`INSERT INTO orders.orders SELECT (jsonb_populate_record(NULL::orders.orders, to_jsonb(o) || jsonb_build_object(
				'id', md5(o.id::text || g)::uuid, 'order_number', 500000 + g, 'contact_id', 500000 + g))).*
			FROM orders.orders o, generate_series(1, $3::int) g WHERE o.tenant_id = $1 AND o.id = $2`,
		`INSERT INTO orders.order_donations SELECT (jsonb_populate_record(NULL::orders.order_donations, to_jsonb(d) || jsonb_build_object(
				'id', gen_random_uuid(), 'order_id', md5(d.order_id::text || g)::uuid))).*
			FROM orders.order_donations d, generate_series(1, $3::int) g WHERE d.tenant_id = $1 AND d.order_id = $2`,
	} {
		if _, err := conn.Exec(context.Background(), q, tenantID, model, n); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
}
