package reports

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"

	"github.com/almoner/almoner/services/reports/store"
)

// runFixture is the reports fixture plus 30 donors of 2026 (contacts
// 1000-1029, one gift each of 1.00 to 30.00), a complete profile and a
// queued run of 2026 with the given minimum.
func runFixture(t *testing.T, minimum string) (*fixture, store.TaxRun) {
	t.Helper()
	f := newFixture(t)
	for i := range int64(30) {
		f.exec(t, `INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name) VALUES ($1, $2, 'Individual', 'Donor', $3)`,
			f.tenant, 1000+i, fmt.Sprint(i))
		f.order(t, f.tenant, 1000+i, "2026-05-01", "Completed", "USD", 0, []don{{f.general, "General", 100 * (i + 1), true, ""}}, nil)
	}
	ctx := context.Background()
	if _, err := f.svc.store.PutProfile(ctx, store.Profile{TenantID: f.tenant, LegalName: "Food Bank", TaxID: "12-3456789",
		Address: store.Address{Line1: "1 Main St"}, Country: "US", TimeZone: "America/New_York"}, "test"); err != nil {
		t.Fatal(err)
	}
	from, to := yearBounds(2026, mustLocation(t, "America/New_York"))
	run, err := f.svc.store.CreateTaxRun(ctx, store.TaxRun{TenantID: f.tenant, ID: uuid.New(), Year: 2026, Minimum: minimum, PeriodStart: from, PeriodEnd: to}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return f, run
}

func mustLocation(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// replica is another process's reports service on the same database.
func replica(f *fixture, lease time.Duration) *taxRunner {
	s := New(f.pool, Config{TaxRunLease: lease, TaxRunBatch: 4, NoTaxRunner: true}, nil)
	return s.runner
}

// TestTaxRunResumesAfterACrash makes one batch of a run on a replica that
// then stops without finishing (its lease runs out), and lets two other
// replicas race to finish it: every donor is made once, none is skipped,
// the run succeeds once, and its status changes are audited once each.
func TestTaxRunResumesAfterACrash(t *testing.T) {
	t.Parallel()
	f, run := runFixture(t, "5.00")
	ctx := context.Background()

	// The replica holds its lease as a working one does, and its last
	// batch renews it for one second only: then it "crashes", and the lease
	// runs out a second after its last write. (A one-second lease from the
	// claim could run out before the first batch was saved, when making
	// four statements took longer on a loaded machine.)
	crashed := replica(f, time.Minute)
	claimed, ok, err := f.svc.store.ClaimTaxRun(ctx, crashed.owner, crashed.lease)
	if err != nil || !ok || claimed.ID != run.ID {
		t.Fatalf("claim: %v %v %v", claimed.ID, ok, err)
	}
	// While the lease is live, no other replica takes the run.
	if _, ok, _ := f.svc.store.ClaimTaxRun(ctx, "other", time.Minute); ok {
		t.Fatal("a leased run was claimed again")
	}
	prof, _ := f.svc.profile(ctx, f.tenant)
	m := minima(claimed.Minimum, []string{"USD", "EUR"})
	donors, err := f.svc.store.TaxRunDonors(ctx, claimed, m, 0, 4)
	if err != nil || len(donors) != 4 {
		t.Fatalf("first batch %v, %v", donors, err)
	}
	items, err := crashed.statements(ctx, claimed, prof, donors)
	if err != nil {
		t.Fatal(err)
	}
	total := 99
	if err := f.svc.store.SaveTaxRunBatch(ctx, claimed, crashed.owner, items, &total, time.Second); err != nil {
		t.Fatal(err)
	}
	// The replica "crashes" mid-batch: it made statements for the next
	// donors but never saved them.
	if _, err := crashed.statements(ctx, claimed, prof, []int64{donors[3] + 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)

	var wg sync.WaitGroup
	for range 2 {
		r := replica(f, 10*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.claimAndRun(ctx) {
			}
		}()
	}
	wg.Wait()
	// The crashed replica's late write is refused.
	if err := f.svc.store.SaveTaxRunBatch(ctx, claimed, crashed.owner, items, nil, time.Second); err == nil {
		t.Error("a replica without the lease saved a batch")
	}

	got, err := f.svc.store.TaxRun(ctx, f.tenant, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Donors of 2026 with at least 5.00: contacts 1004-1029 (26), and the
	// fixture's donors of 2026 (contacts 1, 3 and 6; 2's orders are
	// voided and refunded).
	want := 29
	if got.Status != "succeeded" || got.Processed != want || got.Total == nil || *got.Total != 99 || got.FinishedAt == nil {
		t.Errorf("run = %+v (total %v), want succeeded with %d processed and the first replica's total", got, got.Total, want)
	}
	seen := map[int64]bool{}
	numbers := map[string]bool{}
	err = f.svc.store.TaxRunItems(ctx, f.tenant, run.ID, func(it store.TaxRunItem) error {
		if seen[it.ContactID] || numbers[it.StatementNumber] {
			t.Errorf("contact %d or number %s twice", it.ContactID, it.StatementNumber)
		}
		seen[it.ContactID], numbers[it.StatementNumber] = true, true
		return nil
	})
	if err != nil || len(seen) != want || seen[1003] || !seen[1004] || !seen[1] || !seen[3] || !seen[6] || seen[2] {
		t.Errorf("items: %d contacts %v, %v", len(seen), seen, err)
	}
	var changes []string
	rows, _ := f.pool.Query(ctx, `SELECT action || coalesce(' ' || (changes->'status'->>'new'), '') FROM audit.events
		WHERE tenant_id = $1 AND entity_type = 'TaxStatementRun' AND entity_id = $2 ORDER BY id`, f.tenant, run.ID.String())
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, s)
	}
	if fmt.Sprint(changes) != "[Created Updated running Updated succeeded]" {
		t.Errorf("audit rows %v", changes)
	}
}

// TestTaxRunReplicasShareRuns queues three runs and starts three
// replicas: each run is made by one replica, each once.
func TestTaxRunReplicasShareRuns(t *testing.T) {
	t.Parallel()
	f, first := runFixture(t, "0")
	ctx := context.Background()
	runs := []store.TaxRun{first}
	for range 2 {
		r, err := f.svc.store.CreateTaxRun(ctx, store.TaxRun{TenantID: f.tenant, ID: uuid.New(), Year: 2026, Minimum: "0",
			PeriodStart: first.PeriodStart, PeriodEnd: first.PeriodEnd}, "test")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	var wg sync.WaitGroup
	for range 3 {
		r := replica(f, 10*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.claimAndRun(ctx) {
			}
		}()
	}
	wg.Wait()
	var numbers []string
	for _, r := range runs {
		got, err := f.svc.store.TaxRun(ctx, f.tenant, r.ID)
		if err != nil || got.Status != "succeeded" || got.Total == nil || got.Processed != *got.Total || got.Processed != 33 {
			t.Errorf("run %s = %+v, %v", r.ID, got, err)
		}
		var n string
		if err := f.pool.QueryRow(ctx, `SELECT statement_number FROM reports.tax_statement_run_items WHERE tenant_id = $1 AND run_id = $2 AND contact_id = 1010`,
			f.tenant, r.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		numbers = append(numbers, n)
	}
	// The same donor's statement of the same year keeps its number.
	if numbers[0] != numbers[1] || numbers[1] != numbers[2] {
		t.Errorf("statement numbers across runs: %v", numbers)
	}
	var running int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_type = 'TaxStatementRun' AND changes->'status'->>'new' = 'running'`,
		f.tenant).Scan(&running); err != nil || running != 3 {
		t.Errorf("%d runs started, want 3 (%v)", running, err)
	}
}

func TestMinima(t *testing.T) {
	t.Parallel()
	m := minima("0.5", []string{"USD", "JPY", "KWD"})
	if fmt.Sprint(m.Minor) != "[50 1 500]" {
		t.Errorf("minima = %v, want [50 1 500]", m.Minor)
	}
}

// fakeDownload is the download's stream: what was sent, and its context.
type fakeDownload struct {
	grpc.ServerStream
	sent  []byte
	sends int
}

func (d *fakeDownload) Send(b *httpbody.HttpBody) error {
	d.sends++
	d.sent = append(d.sent, b.GetData()...)
	return nil
}

func (d *fakeDownload) Context() context.Context { return context.Background() }

// TestTaxRunZipIsWholeOrAnError makes a run whose donor and signatory have
// emoji in their names and downloads its ZIP: every PDF is there and
// prints the signatory. Then a statement near the end of the run is made
// unreadable: the download is an error before its first byte (nothing
// sent), not a ZIP cut off after the statements before it had gone out.
func TestTaxRunZipIsWholeOrAnError(t *testing.T) {
	t.Parallel()
	f, run := runFixture(t, "0")
	ctx := context.Background()
	f.exec(t, `UPDATE contacts.contacts SET first_name = 'Poo 💩' WHERE tenant_id = $1 AND id = 1000`, f.tenant)
	prof, err := f.svc.profile(ctx, f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	prof.SignatoryName = "Sig 💩"
	if _, err := f.svc.store.PutProfile(ctx, prof, "test"); err != nil {
		t.Fatal(err)
	}
	for replica(f, time.Minute).claimAndRun(ctx) {
	}
	if run, err = f.svc.store.TaxRun(ctx, f.tenant, run.ID); err != nil || run.Status != "succeeded" {
		t.Fatalf("run %+v, %v", run, err)
	}
	prof, _ = f.svc.profile(ctx, f.tenant)

	var d fakeDownload
	if err := f.svc.writeRunZip(ctx, run, prof, &chunkWriter{stream: &d, contentType: "application/zip"}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(d.sent), int64(len(d.sent)))
	if err != nil || len(zr.File) != int(run.Processed) {
		t.Fatalf("zip of %d files for %d donors: %v", len(zr.File), run.Processed, err)
	}
	var number string
	if err := f.pool.QueryRow(ctx, `SELECT statement_number FROM reports.tax_statement_run_items WHERE tenant_id = $1 AND run_id = $2 AND contact_id = 1000`,
		f.tenant, run.ID).Scan(&number); err != nil {
		t.Fatal(err)
	}
	rc, err := zr.Open(number + ".pdf")
	if err != nil {
		t.Fatal(err)
	}
	pdf, _ := io.ReadAll(rc)
	if text := pdfText(t, pdf); !strings.Contains(text, noSpace("Poo \uFFFD 0")) || !strings.Contains(text, noSpace("Sig \uFFFD")) {
		t.Errorf("%s reads %q", number, text)
	}

	f.exec(t, `UPDATE reports.tax_statement_run_items SET statement = 'not json' WHERE tenant_id = $1 AND run_id = $2
		AND contact_id = (SELECT max(contact_id) FROM reports.tax_statement_run_items WHERE tenant_id = $1 AND run_id = $2)`, f.tenant, run.ID)
	d = fakeDownload{}
	if err := f.svc.writeRunZip(ctx, run, prof, &chunkWriter{stream: &d, contentType: "application/zip"}); err == nil || d.sends != 0 {
		t.Errorf("download with an unreadable statement: %v after %d messages (%d bytes)", err, d.sends, len(d.sent))
	}
}
