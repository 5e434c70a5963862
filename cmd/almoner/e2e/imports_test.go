package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// examplesDir holds the sample files docs/imports.md shows; the tests
// import them, so they stay true.
var examplesDir = filepath.Join("..", "..", "..", "docs", "examples", "imports")

func importsPath(tenantID string, rest ...string) string {
	return tPath(tenantID, "/imports", strings.Join(rest, ""))
}

// mediaType is the Content-Type of a format.
var mediaType = map[string]string{"csv": "text/csv", "jsonl": "application/x-ndjson"}

// uploadImport sends a file to POST …/imports with the query and extra
// headers (name, value, …), as a file of its format.
func uploadImport(t *testing.T, c *apptest.Cluster, tenantID, key, query string, file []byte, headers ...string) *apptest.Response {
	t.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	ct := mediaType[v.Get("format")]
	if ct == "" {
		ct = "text/csv"
	}
	return c.Do(t, "POST", importsPath(tenantID, "?"+query), key, file, append([]string{"Content-Type", ct}, headers...)...)
}

// importFile uploads a file (202) and waits for the import to end.
func importFile(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, query string, file []byte, headers ...string) map[string]any {
	t.Helper()
	queued := uploadImport(t, c, tn.ID, tn.Key, query, file, headers...).Expect(t, http.StatusAccepted).Map(t)
	if queued["status"] != "queued" || queued["id"] == "" {
		t.Fatalf("upload answered %v", queued)
	}
	return waitImport(t, c, tn, queued["id"].(string), 60*time.Second)
}

// waitImport polls an import until it succeeded or failed.
func waitImport(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := c.Do(t, "GET", importsPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if s := m["status"]; s == "succeeded" || s == "failed" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("import %s did not end within %s: %v", id, within, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expectCounts fails unless the import ended with the status and counts
// (rows, created, updated, skipped, failed).
func expectCounts(t *testing.T, m map[string]any, status string, counts ...int) {
	t.Helper()
	names := []string{"rows", "created", "updated", "skipped", "failed"}
	got := []string{fmt.Sprint(m["status"])}
	want := []string{status}
	for i, n := range counts {
		got = append(got, fmt.Sprint(names[i], "=", m[names[i]]))
		want = append(want, fmt.Sprint(names[i], "=", float64(n)))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("import %v: got %s, want %s", m["id"], strings.Join(got, " "), strings.Join(want, " "))
	}
}

// importError is one rejected row as the errors list gives it.
type importError struct {
	Row     int64  `json:"row"`
	Column  string `json:"column"`
	Message string `json:"message"`
}

// importErrors reads every error of an import (pages of 100).
func importErrors(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id string) []importError {
	t.Helper()
	var out []importError
	for page := 1; ; page++ {
		var p struct {
			Items      []importError `json:"items"`
			TotalCount int           `json:"totalCount"`
		}
		c.Do(t, "GET", importsPath(tn.ID, "/", id, fmt.Sprintf("/errors?page=%d&pageSize=100", page)), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
		out = append(out, p.Items...)
		if len(p.Items) == 0 || len(out) >= p.TotalCount {
			return out
		}
	}
}

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// contactByExternalID returns the one contact with the external id.
func contactByExternalID(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, externalID string) map[string]any {
	t.Helper()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	c.Do(t, "GET", contactsPath(tn.ID)+"?externalId="+url.QueryEscape(externalID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list.Items) != 1 {
		t.Fatalf("%d contacts with external id %s, want 1", len(list.Items), externalID)
	}
	return list.Items[0]
}

// TestImportSampleFiles imports the four sample files of docs/imports.md
// (contacts then gifts, CSV and JSON Lines) and finds them everywhere: the
// contacts with their details, the gifts in the donations-by-fund report
// and on a donor's dashboard, the imports' events in the feed (and no
// per-row events). A re-sent file with its Idempotency-Key is the same
// import and writes nothing again.
func TestImportSampleFiles(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	for _, name := range []string{"General", "Building Fund"} {
		c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": name}).Expect(t, http.StatusCreated)
	}
	var ids []string
	for _, f := range []struct {
		file, query string
		rows        int
	}{
		{"contacts.csv", "kind=contacts&format=csv", 3},
		{"contacts.jsonl", "kind=contacts&format=jsonl", 2},
		{"gifts.csv", "kind=gifts&format=csv", 3},
		{"gifts.jsonl", "kind=gifts&format=jsonl", 2},
	} {
		m := importFile(t, c, tn, f.query, readExample(t, f.file), "Idempotency-Key", "sample-"+f.file)
		expectCounts(t, m, "succeeded", f.rows, f.rows, 0, 0, 0)
		if m["startedAt"] == nil || m["finishedAt"] == nil || m["message"] != "" {
			t.Errorf("%s: %v", f.file, m)
		}
		if errs := importErrors(t, c, tn, m["id"].(string)); len(errs) != 0 {
			t.Errorf("%s: errors %v", f.file, errs)
		}
		ids = append(ids, m["id"].(string))
	}

	ada := contactByExternalID(t, c, tn, "CRM-1001")
	if ada["firstName"] != "Ada" || ada["lastName"] != "Lovelace" || ada["contactType"] != "Individual" ||
		!strings.Contains(fmt.Sprint(ada["emails"]), "ada.lovelace@example.org") || !strings.Contains(fmt.Sprint(ada["addresses"]), "12 Analytical Way") ||
		fmt.Sprint(ada["tags"]) != "[major donor newsletter]" {
		t.Errorf("CRM-1001 = %v", ada)
	}
	if org := contactByExternalID(t, c, tn, "CRM-1003"); org["contactType"] != "Organization" || org["organizationName"] != "Babbage & Sons, Ltd." {
		t.Errorf("CRM-1003 = %v", org)
	}
	if alan := contactByExternalID(t, c, tn, "CRM-2001"); fmt.Sprint(alan["tags"]) != "[newsletter volunteer]" {
		t.Errorf("CRM-2001 = %v", alan)
	}

	// The same file with the same key: the first import, nothing again.
	again := uploadImport(t, c, tn.ID, tn.Key, "kind=gifts&format=csv", readExample(t, "gifts.csv"), "Idempotency-Key", "sample-gifts.csv").
		Expect(t, http.StatusAccepted).Map(t)
	if again["id"] != ids[2] || again["status"] != "succeeded" {
		t.Errorf("re-sent gifts.csv answered %v, want import %s succeeded", again, ids[2])
	}

	// The gifts in a report: General has 250 + 40 + 75.50, Building Fund
	// 1000 + 500, once each.
	var run reportRun
	c.Do(t, "POST", tPath(tn.ID, "/reports/types/donations-by-fund/run"), tn.Key,
		map[string]any{"parameters": map[string]any{"From": "2025-01-01", "To": "2026-12-31"}}).Expect(t, http.StatusOK).JSON(t, &run)
	funds := map[string]string{}
	for _, r := range run.Rows {
		funds[cellText(t, r["FundName"])] = fmt.Sprintf("%s %s %s", cellText(t, r["Currency"]), r["GiftCount"], r["Amount"])
	}
	if want := map[string]string{"General": "USD 3 365.50", "Building Fund": "USD 2 1500.00"}; fmt.Sprint(funds) != fmt.Sprint(want) {
		t.Errorf("donations by fund %v, want %v", funds, want)
	}

	// And on the donor's dashboard.
	var dash struct {
		GivingTotals []struct {
			Currency      string
			LifetimeTotal json.Number
			GiftCount     int
		}
	}
	r := c.Do(t, "GET", contactPath(tn.ID, num(ada["id"]))+"/dashboard", tn.Key, nil).Expect(t, http.StatusOK)
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(&dash); err != nil {
		t.Fatal(err)
	}
	if len(dash.GivingTotals) != 1 || dash.GivingTotals[0].Currency != "USD" || dash.GivingTotals[0].LifetimeTotal != "250.00" || dash.GivingTotals[0].GiftCount != 1 {
		t.Errorf("Ada's dashboard %s", r.Body)
	}

	checkImportEvents(t, c, tn, ids)
}

// checkImportEvents follows the feed (an event shows once every older
// transaction on the server has ended, so it may wait) until each import
// has its import.created and an import.updated per state change (queued →
// validating → importing → succeeded: three), then checks that no
// imported contact or gift made an event of its own.
func checkImportEvents(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, ids []string) {
	t.Helper()
	counts := map[string]int{}
	complete := func() bool {
		for _, id := range ids {
			if counts["import.created "+id] < 1 || counts["import.updated "+id] < 3 {
				return false
			}
		}
		return true
	}
	var after string
	for deadline := time.Now().Add(60 * time.Second); !complete() && time.Now().Before(deadline); {
		q := "limit=100"
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		p := readFeed(t, c, tn, q)
		for _, e := range p.events(t) {
			counts[e.Event+" "+e.Data.EntityID]++
			counts[e.Event]++
		}
		after = p.NextCursor
		if !p.HasMore {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, id := range ids {
		if counts["import.created "+id] != 1 || counts["import.updated "+id] != 3 {
			t.Errorf("import %s: %d import.created, %d import.updated; want 1 and 3", id, counts["import.created "+id], counts["import.updated "+id])
		}
	}
	for _, ev := range []string{"contact.created", "contact.updated", "order.created", "order_donation.created", "order_payment.created"} {
		if counts[ev] != 0 {
			t.Errorf("%d %s events: imported rows fire no events of their own", counts[ev], ev)
		}
	}
}

// TestImportDuplicatesAndDryRun imports a row matching an existing contact
// (by email, by phone, by name at the same postal code) under each
// duplicates policy, and a dry run that checks everything and writes
// nothing.
func TestImportDuplicatesAndDryRun(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	jane := createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Jane", "lastName": "Donor",
		"emails": []any{map[string]any{"emailAddress": "jane@example.org", "emailType": "Personal", "isPrimary": true}}})
	createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Sam", "lastName": "Caller",
		"phones": []any{map[string]any{"phoneNumber": "+1 617 555 0142", "phoneType": "Mobile", "isPrimary": true}}})
	createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Robert", "lastName": "Neighbour",
		"addresses": []any{map[string]any{"line1": "9 Elm St", "city": "Springfield", "postalCode": "02134", "country": "US", "addressType": "Home", "isPrimary": true}}})
	total := func() int {
		var p struct {
			TotalCount int `json:"totalCount"`
		}
		c.Do(t, "GET", contactsPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
		return p.TotalCount
	}
	// Matches by email (in another case), by phone (written otherwise),
	// by name at the same postal code; and one new contact.
	file := []byte("firstName,lastName,email,phone,line1,postalCode,country\n" +
		"Jane,Donor-Smith,JANE@example.org,,,,\n" +
		"Samuel,Caller,,+1 (617) 555-0142,,,\n" +
		"Robert,Neighbour,,,9 Elm Street,02134,US\n" +
		"New,Person,new.person@example.org,,,,\n")

	dry := importFile(t, c, tn, "kind=contacts&format=csv&duplicates=update&dryRun=true", file)
	if dry["status"] != "succeeded" || dry["dryRun"] != true || dry["rows"] != float64(4) || dry["failed"] != float64(0) {
		t.Errorf("dry run %v", dry)
	}
	if n := total(); n != 3 {
		t.Errorf("%d contacts after a dry run, want the 3 there were", n)
	}

	expectCounts(t, importFile(t, c, tn, "kind=contacts&format=csv", file), "succeeded", 4, 1, 0, 3, 0)
	if n := total(); n != 4 {
		t.Errorf("%d contacts after duplicates=skip, want 4", n)
	}
	expectCounts(t, importFile(t, c, tn, "kind=contacts&format=csv&duplicates=update", []byte(string(file[:bytes.IndexByte(file, '\n')+1])+"Jane,Donor-Smith,jane@example.org,,,,\n")),
		"succeeded", 1, 0, 1, 0, 0)
	if got := c.Do(t, "GET", contactPath(tn.ID, num(jane["id"])), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["lastName"] != "Donor-Smith" {
		t.Errorf("duplicates=update left %v", got)
	}
	if n := total(); n != 4 {
		t.Errorf("%d contacts after duplicates=update, want 4", n)
	}
	expectCounts(t, importFile(t, c, tn, "kind=contacts&format=csv&duplicates=create", file), "succeeded", 4, 4, 0, 0, 0)
	if n := total(); n != 8 {
		t.Errorf("%d contacts after duplicates=create, want 8", n)
	}

	// A dry run of gifts checks the fund and the contact too, and writes
	// no order.
	gifts := []byte("contactId,date,amount,fund\n" +
		fmt.Sprintf("%d,2026-05-01,10.00,General\n", num(jane["id"])) +
		fmt.Sprintf("%d,2026-05-01,10.00,No Such Fund\n", num(jane["id"])))
	c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated)
	dry = importFile(t, c, tn, "kind=gifts&format=csv&dryRun=true", gifts)
	if dry["status"] != "succeeded" || dry["rows"] != float64(2) || dry["failed"] != float64(1) {
		t.Errorf("gifts dry run %v", dry)
	}
	if errs := importErrors(t, c, tn, dry["id"].(string)); len(errs) != 1 || errs[0].Row != 2 || errs[0].Column != "fund" {
		t.Errorf("gifts dry run errors %+v, want row 2 fund", errs)
	}
	var orders struct {
		TotalCount int `json:"totalCount"`
	}
	c.Do(t, "GET", tPath(tn.ID, "/orders"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &orders)
	if orders.TotalCount != 0 {
		t.Errorf("%d orders after a dry run", orders.TotalCount)
	}
}

// TestImportBadRows imports files with rejected rows: every error is
// listed by row and column, the good rows are imported; an unknown
// column fails the whole import naming it.
func TestImportBadRows(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated)
	contacts := []byte("externalId,firstName,lastName,email,contactType\n" +
		"B-1,Good,One,good.one@example.org,\n" +
		"B-2,Bad,Email,not-an-email,\n" +
		"B-3,,,,Individual\n" +
		"B-4,Good,Two,,\n" +
		"B-5,Bad,Type,,Household\n")
	m := importFile(t, c, tn, "kind=contacts&format=csv", contacts)
	expectCounts(t, m, "succeeded", 5, 2, 0, 0, 3)
	errs := importErrors(t, c, tn, m["id"].(string))
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%d:%s", e.Row, e.Column))
		if e.Message == "" {
			t.Errorf("error without a message: %+v", e)
		}
	}
	if strings.Join(got, " ") != "2:email 3:lastName 5:contactType" {
		t.Errorf("errors %v (%+v)", got, errs)
	}
	contactByExternalID(t, c, tn, "B-1")
	contactByExternalID(t, c, tn, "B-4")

	gifts := []byte(`{"contactExternalId": "B-1", "date": "2026-05-01", "amount": 12.50, "fund": "General"}` + "\n" +
		`{"contactExternalId": "B-1", "date": "2026-02-30", "amount": 5, "fund": "General"}` + "\n" +
		`{"contactExternalId": "B-404", "date": "2026-05-01", "amount": 5, "fund": "General"}` + "\n" +
		`{"contactExternalId": "B-4", "date": "2026-05-01", "amount": -3, "fund": "General"}` + "\n" +
		`not json` + "\n" +
		`{"contactExternalId": "B-4", "date": "2026-05-02", "amount": 7, "fund": "General", "paymentMethod": "Check", "checkNumber": "77"}` + "\n")
	m = importFile(t, c, tn, "kind=gifts&format=jsonl", gifts)
	expectCounts(t, m, "succeeded", 6, 2, 0, 0, 4)
	got = nil
	for _, e := range importErrors(t, c, tn, m["id"].(string)) {
		got = append(got, fmt.Sprintf("%d:%s", e.Row, e.Column))
	}
	if strings.Join(got, " ") != "2:date 3:contactExternalId 4:amount 5:" {
		t.Errorf("gift errors %v", got)
	}

	failed := importFile(t, c, tn, "kind=contacts&format=csv", []byte("firstName,lastName,shoeSize,favouriteColour\nAda,Lovelace,38,green\n"))
	if failed["status"] != "failed" || !strings.Contains(fmt.Sprint(failed["message"]), "shoeSize") || !strings.Contains(fmt.Sprint(failed["message"]), "favouriteColour") {
		t.Errorf("unknown columns: %v", failed)
	}
}

// TestImportRefusals: the scope, another tenant, the query and the body's
// limits, each refused with its problem document.
func TestImportRefusals(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	file := []byte("firstName,lastName\nAda,Lovelace\n")
	m := importFile(t, c, tn, "kind=contacts&format=csv", file)

	noScope := c.NewKey(t, tn.ID, "contacts:create", "contacts:view", "donations:view")
	expectProblem(t, uploadImport(t, c, tn.ID, noScope, "kind=contacts&format=csv", file), http.StatusForbidden)
	expectProblem(t, c.Do(t, "GET", importsPath(tn.ID, "/", m["id"].(string)), noScope, nil), http.StatusForbidden)
	expectProblem(t, c.Do(t, "GET", importsPath(tn.ID, "/", m["id"].(string), "/errors"), noScope, nil), http.StatusForbidden)

	other := c.NewTenant(t)
	expectProblem(t, uploadImport(t, c, other.ID, tn.Key, "kind=contacts&format=csv", file), http.StatusNotFound)
	expectProblem(t, c.Do(t, "GET", importsPath(other.ID, "/", m["id"].(string)), other.Key, nil), http.StatusNotFound)
	expectProblem(t, c.Do(t, "GET", importsPath(other.ID, "/", m["id"].(string), "/errors"), other.Key, nil), http.StatusNotFound)
	expectProblem(t, c.Do(t, "GET", importsPath(tn.ID, "/0197a3c2-0000-7000-8000-000000000000"), tn.Key, nil), http.StatusNotFound)

	for _, tc := range []struct {
		name, query, contentType, field string
	}{
		{"no kind", "format=csv", "text/csv", "Kind"},
		{"unknown kind", "kind=donors&format=csv", "text/csv", "Kind"},
		{"unknown format", "kind=contacts&format=xml", "text/csv", "Format"},
		{"unknown policy", "kind=contacts&format=csv&duplicates=merge", "text/csv", "Duplicates"},
		{"dryRun not a boolean", "kind=contacts&format=csv&dryRun=maybe", "text/csv", "DryRun"},
		{"unknown parameter", "kind=contacts&format=csv&delimiter=tab", "text/csv", "Delimiter"},
		{"media type of the other format", "kind=contacts&format=csv", "application/x-ndjson", "ContentType"},
	} {
		r := c.Do(t, "POST", importsPath(tn.ID, "?"+tc.query), tn.Key, file, "Content-Type", tc.contentType)
		if p := expectProblem(t, r, http.StatusBadRequest); len(p.Errors[tc.field]) == 0 {
			t.Errorf("%s: errors %v, want one under %s", tc.name, p.Errors, tc.field)
		}
	}

	// A declared length over 1 GiB is refused before a byte of it is read.
	resp, body, closed := rawExchange(t, c, "POST "+importsPath(tn.ID, "?kind=contacts&format=csv")+" HTTP/1.1\r\nHost: almoner\r\n"+ //nolint:bodyclose // rawExchange read and closed it
		"X-Api-Key: "+tn.Key+"\r\nContent-Type: text/csv\r\nContent-Length: 1073741825\r\n\r\n")
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/problem+json" || !closed {
		t.Errorf("1 GiB + 1: %d %s (closed %v)", resp.StatusCode, body, closed)
	}
}

// TestImportResumesAfterKill runs an import of 4,000 contacts in an
// imports replica (a child process, 20 rows a batch, a 2 s lease), kills
// it with SIGKILL mid-import, and lets a fresh replica on the same
// database finish it: the import succeeds with every row imported exactly
// once.
func TestImportResumesAfterKill(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_IMPORTS_RUNNER": "false"}})
	tn := c.NewTenant(t)
	const n = 4000
	var file bytes.Buffer
	file.WriteString("externalId,firstName,lastName,email\n")
	for i := range n {
		fmt.Fprintf(&file, "R-%d,Donor,Number %d,donor%d@example.org\n", i, i, i)
	}
	env := []string{"DATABASE_URL=" + c.DatabaseURL, "ALMONER_METRICS_ADDR=off", "ALMONER_HTTP_ADDR=",
		"ALMONER_AUTH_ADDR=" + c.ServiceAddr("auth"), "ALMONER_CONTACTS_ADDR=" + c.ServiceAddr("contacts"), "ALMONER_ORDERS_ADDR=" + c.ServiceAddr("orders"),
		"ALMONER_IMPORTS_RUNNER=true", "ALMONER_IMPORTS_BATCH=20", "ALMONER_IMPORTS_LEASE=2s", "ALMONER_IMPORTS_POLL=100ms"}
	for k, v := range c.Settings {
		if k != "ALMONER_IMPORTS_RUNNER" {
			env = append(env, k+"="+v)
		}
	}
	start := func() *apptest.Child {
		return apptest.StartChild(t, "imports", append(env, "ALMONER_GRPC_ADDR=127.0.0.1:0")...) // a port of its own when it listens: nothing dials it
	}
	id := uploadImport(t, c, tn.ID, tn.Key, "kind=contacts&format=csv", file.Bytes()).Expect(t, http.StatusAccepted).Map(t)["id"].(string)
	poll := func(done func(map[string]any) bool) map[string]any {
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			m := c.Do(t, "GET", importsPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
			if done(m) || time.Now().After(deadline) {
				return m
			}
		}
	}
	victim := start()
	m := poll(func(m map[string]any) bool {
		d, _ := m["created"].(float64)
		return d >= 400 || m["status"] == "succeeded"
	})
	if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if m["status"] != "importing" {
		t.Fatalf("before the kill: %v (the import must still be going for the test to mean anything)", m)
	}
	t.Logf("killed the replica at %v of %d rows created", m["created"], n)
	start()
	m = poll(func(m map[string]any) bool { return m["status"] == "succeeded" || m["status"] == "failed" })
	expectCounts(t, m, "succeeded", n, n, 0, 0, 0)

	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, distinct int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT external_id) FROM contacts.contacts WHERE tenant_id = $1 AND external_id LIKE 'R-%'`,
		tn.ID).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Errorf("%d contacts, %d distinct external ids; want %d of each (every row once)", rows, distinct, n)
	}
}

// TestImportKeyOfAnotherUpload: an Idempotency-Key answers only the
// upload it was first used for. A gifts file sent with the key of a
// contacts file is a 422 (it answered 202 with the contacts import, and
// the gifts were never imported), as is another file or another option
// with the key; nothing is stored for them, and the same upload again
// still answers the first import.
func TestImportKeyOfAnotherUpload(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated)
	contacts := []byte("externalId,firstName,lastName\nK-1,Ada,Lovelace\n")
	gifts := []byte("contactExternalId,date,amount\nK-1,2026-05-01,10\n")
	first := importFile(t, c, tn, "kind=contacts&format=csv", contacts, "Idempotency-Key", "migration-1")

	for _, tc := range []struct {
		name, query string
		file        []byte
	}{
		{"a gifts file", "kind=gifts&format=csv", gifts},
		{"another contacts file", "kind=contacts&format=csv", append(contacts, "K-2,Alan,Turing\n"...)},
		{"another duplicates policy", "kind=contacts&format=csv&duplicates=update", contacts},
		{"a dry run", "kind=contacts&format=csv&dryRun=true", contacts},
	} {
		p := expectProblem(t, uploadImport(t, c, tn.ID, tn.Key, tc.query, tc.file, "Idempotency-Key", "migration-1"), http.StatusUnprocessableEntity)
		if !strings.Contains(fmt.Sprint(p.Errors), "Import.IdempotencyKeyReused") {
			t.Errorf("%s with the key: %+v, want Import.IdempotencyKeyReused", tc.name, p)
		}
	}
	var list struct {
		TotalCount int `json:"totalCount"`
	}
	c.Do(t, "GET", importsPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if list.TotalCount != 1 {
		t.Errorf("%d imports after the refused uploads, want the first only", list.TotalCount)
	}

	again := uploadImport(t, c, tn.ID, tn.Key, "kind=contacts&format=csv", contacts, "Idempotency-Key", "migration-1").
		Expect(t, http.StatusAccepted).Map(t)
	if again["id"] != first["id"] || again["status"] != "succeeded" {
		t.Errorf("the same upload again answered %v, want import %v succeeded", again, first["id"])
	}
	// A new key imports the gifts.
	m := importFile(t, c, tn, "kind=gifts&format=csv", gifts, "Idempotency-Key", "migration-2")
	expectCounts(t, m, "succeeded", 1, 1, 0, 0, 0)
}

// TestGiftDatesNoCalendarNeeds: a gifts import whose rows are dated
// 9999-12-31, 0001-01-01, 1899-12-31 or past the day after today in the
// organization's time zone fails those rows under "date" (they were
// recorded, and could never be receipted), and imports the others, down
// to 1900-01-01; a gift of 1999 is on the donor's 1999 statement. An
// order's body has no date of its own: one sent with an orderDate is a
// 400 and records nothing.
func TestGiftDatesNoCalendarNeeds(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	profile := map[string]any{}
	for k, v := range receiptProfile {
		profile[k] = v
	}
	// UTC+14: from 10:00 UTC its today is UTC's tomorrow.
	profile["timeZone"] = "Pacific/Kiritimati"
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, profile).Expect(t, http.StatusOK)
	today := time.Now().In(mustLoc(t, "Pacific/Kiritimati"))
	// Three days ahead, not two: the day may turn while the test runs.
	tomorrow, tooLate := today.AddDate(0, 0, 1).Format(time.DateOnly), today.AddDate(0, 0, 3).Format(time.DateOnly)
	gifts := fmt.Sprintf("contactId,date,amount,fund\n"+
		"%[1]d,9999-12-31,10,General\n%[1]d,0001-01-01,10,General\n%[1]d,1899-12-31,10,General\n"+
		"%[1]d,1900-01-01,11,General\n%[1]d,1999-06-01,12,General\n%[1]d,%[2]s,13,General\n%[1]d,%[3]s,10,General\n",
		int64(f.contactID), tomorrow, tooLate)
	m := importFile(t, c, tn, "kind=gifts&format=csv", []byte(gifts))
	expectCounts(t, m, "succeeded", 7, 3, 0, 0, 4)
	var got []string
	for _, e := range importErrors(t, c, tn, m["id"].(string)) {
		got = append(got, fmt.Sprintf("%d:%s", e.Row, e.Column))
		if !strings.Contains(e.Message, "between 1900-01-01 and ") {
			t.Errorf("row %d: %q", e.Row, e.Message)
		}
	}
	if strings.Join(got, " ") != "1:date 2:date 3:date 7:date" {
		t.Errorf("errors %v, want rows 1, 2, 3 and 7 under date", got)
	}

	var s1999 statementDoc
	c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d/giving-statements/1999", int64(f.contactID))), tn.Key, nil).
		Expect(t, http.StatusOK).JSON(t, &s1999)
	if len(s1999.Gifts) != 1 || s1999.Gifts[0].Amount != 12 {
		t.Errorf("1999 statement gifts %+v, want the gift of 12", s1999.Gifts)
	}

	b := f.cashOrder(5)
	b["orderDate"] = "9999-12-31"
	if e := errorsOf(t, c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusBadRequest)); len(e["OrderDate"]) == 0 {
		t.Errorf("an order with an orderDate: errors %v, want one under OrderDate", e)
	}
	var orders struct {
		TotalCount int `json:"totalCount"`
	}
	c.Do(t, "GET", tPath(tn.ID, "/orders"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &orders)
	if orders.TotalCount != 3 {
		t.Errorf("%d orders, want the 3 imported", orders.TotalCount)
	}
}
