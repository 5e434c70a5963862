package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

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
	e := errorsOf(t, c.Do(t, "POST", runs, tn.Key, map[string]any{"year": 1999, "minimumAmount": -1}).Expect(t, http.StatusBadRequest))
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
	rc.Close()
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
	out, err := exec.Command("pdftotext", "-layout", file, "-").Output()
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
