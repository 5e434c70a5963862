package contacts

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/importrows"
	"github.com/almoner/almoner/pkg/service"
)

// TestPruneImportRows: import rows older than the retention are deleted,
// in more than one chunk, and younger ones kept, whichever tenant they
// belong to (the retention is global). The rows are written by the import
// itself (COPY, created_at by default) and by INSERT, then aged.
func TestPruneImportRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	const retention = 30 * 24 * time.Hour
	f.svc.cfg.ImportRowsRetention = retention
	var logs strings.Builder
	f.svc.logger = slog.New(slog.NewTextHandler(&logs, nil))
	other := uuid.NewString()

	// A batch through the import: its rows take created_at by default.
	oldImport, newImport := uuid.NewString(), uuid.NewString()
	f.importRows(t, oldImport, "create", false,
		&contactsv1.ContactImportRow{Row: 1, FirstName: "Old", LastName: "One", Email: "old1@example.org"},
		&contactsv1.ContactImportRow{Row: 2, LastName: "Bad", Email: "not-an-email"})
	first := f.importRows(t, newImport, "create", false,
		&contactsv1.ContactImportRow{Row: 1, FirstName: "New", LastName: "One", Email: "new1@example.org"})
	if n := f.count(t, `SELECT count(*) FROM contacts.import_rows WHERE created_at > now() - interval '1 minute'`); n != 3 {
		t.Fatalf("%d fresh import rows after the batches, want 3", n)
	}
	// More old rows than one chunk, in this tenant and another; rows of
	// the other tenant on each side of the cutoff.
	cases := []struct {
		tenant string
		rows   int
		age    time.Duration
	}{
		{f.tenant, importrows.PruneChunk + 2_500, retention + time.Hour},
		{other, importrows.PruneChunk, retention + 24*time.Hour},
		{other, 40, retention - time.Hour},
		{f.tenant, 60, time.Hour},
	}
	for i, c := range cases {
		if _, err := f.pool.Exec(ctx, `INSERT INTO contacts.import_rows (tenant_id, import_id, row, outcome, created_at)
			SELECT $1, $2, g, 'skipped', now() - make_interval(secs => $4) FROM generate_series(1, $3) g`,
			c.tenant, uuid.New(), c.rows, c.age.Seconds()); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
	}
	if _, err := f.pool.Exec(ctx, `UPDATE contacts.import_rows SET created_at = now() - interval '31 days' WHERE import_id = $1`, oldImport); err != nil {
		t.Fatal(err)
	}

	before := testutil.ToFloat64(importRowsPruned)
	if err := f.svc.pruneImportRows(ctx); err != nil {
		t.Fatal(err)
	}
	wantPruned := importrows.PruneChunk + 2_500 + importrows.PruneChunk + 2
	// The counter is the process's: other tests' prunes may add to it, so
	// it must have grown by at least this one's.
	if got := testutil.ToFloat64(importRowsPruned) - before; got < float64(wantPruned) {
		t.Errorf("counter grew by %v, want at least %d", got, wantPruned)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("count=%d", wantPruned)) {
		t.Errorf("log %q does not say %d rows were pruned", logs.String(), wantPruned)
	}
	for _, c := range []struct {
		what   string
		tenant string
		want   int
	}{
		{"the tenant's young rows", f.tenant, 60 + 1},
		{"the other tenant's young rows", other, 40},
	} {
		if got := f.count(t, `SELECT count(*) FROM contacts.import_rows WHERE tenant_id = $1`, c.tenant); got != c.want {
			t.Errorf("%s: %d left, want %d", c.what, got, c.want)
		}
	}
	if got := f.count(t, `SELECT count(*) FROM contacts.import_rows WHERE import_id = $1`, oldImport); got != 0 {
		t.Errorf("%d rows of the old import left, want 0", got)
	}
	if got := f.count(t, `SELECT count(*) FROM contacts.import_rows WHERE import_id = $1`, newImport); got != 1 {
		t.Errorf("%d rows of the new import left, want 1", got)
	}

	// Nothing left to prune: no rows, no log line.
	logs.Reset()
	if err := f.svc.pruneImportRows(ctx); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("a prune of nothing logged %q", logs.String())
	}
	// The imports still answer: a batch of the young import sent again is
	// answered from its row, not written twice.
	again := f.importRows(t, newImport, "create", false,
		&contactsv1.ContactImportRow{Row: 1, FirstName: "New", LastName: "One", Email: "new1@example.org"})
	if again[1].GetOutcome() != "created" || again[1].GetEntityId() != first[1].GetEntityId() {
		t.Errorf("young import's batch again: %v, want %v", again[1], first[1])
	}
}

// TestPruneImportRowsStopsWithItsContext: a cancelled prune deletes
// nothing more and says so.
func TestPruneImportRowsStopsWithItsContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO contacts.import_rows (tenant_id, import_id, row, outcome, created_at)
		SELECT $1, $2, g, 'skipped', now() - interval '90 days' FROM generate_series(1, 100) g`, f.tenant, uuid.New()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := f.svc.store.PruneImportRows(ctx, importrows.DefaultRetention, 10)
	if n != 0 || err != nil {
		t.Errorf("cancelled prune = %d, %v; want 0, nil", n, err)
	}
	if got := f.count(t, `SELECT count(*) FROM contacts.import_rows`); got != 100 {
		t.Errorf("%d rows left, want 100", got)
	}
}

// TestImportRowsRetentionSetting: the module reads ALMONER_IMPORT_ROWS_RETENTION.
func TestImportRowsRetentionSetting(t *testing.T) {
	t.Parallel()
	// The bounds are pkg/importrows' (TestRetention); the module reads
	// them: a value out of bounds stops the service from being built.
	_, err := Module.New(context.Background(), service.Deps{Config: config.Overlay(map[string]string{importrows.Setting: "1h"}, nil)})
	if err == nil || !strings.Contains(err.Error(), importrows.Setting) {
		t.Errorf("module built with a retention of 1h: %v", err)
	}
}
