package orders

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/importrows"
	"github.com/almoner/almoner/pkg/service"
)

// TestPruneImportRows: the runner's housekeeping deletes import rows
// older than the retention, in more than one chunk, and keeps younger
// ones, whichever tenant they belong to (the retention is global). Rows
// are written by the import itself (INSERT, created_at by default) and
// directly, then aged. The gifts of pruned rows stay, and their external
// ids still skip them.
func TestPruneImportRows(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	ctx := context.Background()
	svc := f.srv.s
	const retention = 30 * 24 * time.Hour
	svc.cfg.ImportRowsRetention = retention
	var logs strings.Builder
	svc.logger = slog.New(slog.NewTextHandler(&logs, nil))
	other := uuid.New()

	first := f.importRows(t, false, giftRow(1, "old-1", 7, "General", "USD"), giftRow(2, "old-2", 7, "Nope", "USD"))
	if first[0].GetOutcome() != "created" || first[1].GetOutcome() != "failed" {
		t.Fatalf("first batch: %v", first)
	}
	oldImport := f.importID
	if n := f.count(t, `SELECT count(*) FROM orders.import_rows WHERE tenant_id = $1 AND created_at > now() - interval '1 minute'`); n != 2 {
		t.Fatalf("%d fresh import rows after the batch, want 2", n)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE orders.import_rows SET created_at = now() - interval '31 days' WHERE import_id = $1`, oldImport); err != nil {
		t.Fatal(err)
	}
	f.importID = uuid.Must(uuid.NewV7())
	f.importRows(t, false, giftRow(1, "new-1", 7, "General", "USD"))

	cases := []struct {
		tenant uuid.UUID
		rows   int
		age    time.Duration
	}{
		{f.tenant, importrows.PruneChunk + 2_500, retention + time.Hour},
		{other, importrows.PruneChunk, retention + 24*time.Hour},
		{other, 40, retention - time.Hour},
		{f.tenant, 60, time.Hour},
	}
	for i, c := range cases {
		if _, err := f.pool.Exec(ctx, `INSERT INTO orders.import_rows (tenant_id, import_id, row, outcome, created_at)
			SELECT $1, $2, g, 'skipped', now() - make_interval(secs => $4) FROM generate_series(1, $3) g`,
			c.tenant, uuid.New(), c.rows, c.age.Seconds()); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
	}

	before := testutil.ToFloat64(importRowsPruned)
	runner := &housekeeper{s: svc}
	runner.run(ctx)
	wantPruned := importrows.PruneChunk + 2_500 + importrows.PruneChunk + 2
	// The counter is the process's: other tests' prunes may add to it.
	if got := testutil.ToFloat64(importRowsPruned) - before; got < float64(wantPruned) {
		t.Errorf("counter grew by %v, want at least %d", got, wantPruned)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("count=%d", wantPruned)) {
		t.Errorf("log %q does not say %d rows were pruned", logs.String(), wantPruned)
	}
	for _, c := range []struct {
		what string
		sql  string
		arg  any
		want int
	}{
		{"the tenant's young rows", `SELECT count(*) FROM orders.import_rows WHERE tenant_id = $1`, f.tenant, 60 + 1},
		{"the other tenant's young rows", `SELECT count(*) FROM orders.import_rows WHERE tenant_id = $1`, other, 40},
		{"rows of the old import", `SELECT count(*) FROM orders.import_rows WHERE import_id = $1`, oldImport, 0},
		{"rows of the new import", `SELECT count(*) FROM orders.import_rows WHERE import_id = $1`, f.importID, 1},
		{"gifts of the old import", `SELECT count(*) FROM orders.orders WHERE import_id = $1`, oldImport, 1},
	} {
		var got int
		if err := f.pool.QueryRow(ctx, c.sql, c.arg).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}

	// Nothing left to prune: no log line.
	logs.Reset()
	(&housekeeper{s: svc}).run(ctx)
	if logs.Len() != 0 {
		t.Errorf("a prune of nothing logged %q", logs.String())
	}
	// The same runner prunes again only ImportRowsPruneEvery later.
	if _, err := f.pool.Exec(ctx, `INSERT INTO orders.import_rows (tenant_id, import_id, row, outcome, created_at)
		SELECT $1, $2, g, 'skipped', now() - interval '40 days' FROM generate_series(1, 5) g`, other, uuid.New()); err != nil {
		t.Fatal(err)
	}
	runner.run(ctx)
	if n := f.count(t, `SELECT count(*) FROM orders.import_rows WHERE created_at < now() - interval '39 days' AND tenant_id <> $1`); n != 5 {
		t.Errorf("%d old rows after a second pass within %s, want the 5 kept for the next prune", n, ImportRowsPruneEvery)
	}
	runner.pruned = time.Now().Add(-ImportRowsPruneEvery)
	runner.run(ctx)
	if n := f.count(t, `SELECT count(*) FROM orders.import_rows WHERE created_at < now() - interval '39 days' AND tenant_id <> $1`); n != 0 {
		t.Errorf("%d old rows after a pass %s later, want 0", n, ImportRowsPruneEvery)
	}
	// The young import's batch sent again is answered from its row.
	if again := f.importRows(t, false, giftRow(1, "new-1", 7, "General", "USD")); again[0].GetOutcome() != "created" {
		t.Errorf("young import's batch again: %v", again[0])
	}
	if n := f.count(t, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND external_id = 'new-1'`); n != 1 {
		t.Errorf("%d gifts new-1, want 1", n)
	}
}

// TestPruneImportRowsStopsWithItsContext: a cancelled prune deletes
// nothing.
func TestPruneImportRowsStopsWithItsContext(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO orders.import_rows (tenant_id, import_id, row, outcome, created_at)
		SELECT $1, $2, g, 'skipped', now() - interval '90 days' FROM generate_series(1, 100) g`, f.tenant, uuid.New()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := f.srv.s.imports.PruneImportRows(ctx, importrows.DefaultRetention, 10); n != 0 || err != nil {
		t.Errorf("cancelled prune = %d, %v; want 0, nil", n, err)
	}
	if got := f.count(t, `SELECT count(*) FROM orders.import_rows WHERE tenant_id = $1`); got != 100 {
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
