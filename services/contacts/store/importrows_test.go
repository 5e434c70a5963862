package store_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/contacts/migrations"
)

// TestImportRowsCreatedAtMigration: rows recorded before migration 00006
// take the migration's time as created_at, rows recorded after take their
// own, and the prune's BRIN index is there.
func TestImportRowsCreatedAtMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := migrations.Set()
	old := fstest.MapFS{}
	err := fs.WalkDir(all.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") || p >= "00006" {
			return err
		}
		b, err := fs.ReadFile(all.FS, p)
		old[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	url := testdb.New(t, audit.Migrations(), ratelimit.Migrations(), db.Migrations{Schema: all.Schema, FS: old})
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tenant, imp := uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO contacts.import_rows (tenant_id, import_id, row, outcome, contact_id)
		SELECT $1, $2, g, 'created', g FROM generate_series(1, 3) g`, tenant, imp); err != nil {
		t.Fatal(err)
	}
	var before time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, url, audit.Migrations(), ratelimit.Migrations(), all); err != nil {
		t.Fatal(err)
	}
	var after time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO contacts.import_rows (tenant_id, import_id, row, outcome, contact_id) VALUES ($1, $2, 4, 'created', 4)`,
		tenant, imp); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT row, created_at FROM contacts.import_rows WHERE import_id = $1 ORDER BY row`, imp)
	if err != nil {
		t.Fatal(err)
	}
	var migrated []time.Time
	for rows.Next() {
		var row int64
		var at time.Time
		if err := rows.Scan(&row, &at); err != nil {
			t.Fatal(err)
		}
		switch {
		case row <= 3 && (at.Before(before) || at.After(after)):
			t.Errorf("row %d: created_at %s, want the migration's time, between %s and %s", row, at, before, after)
		case row == 4 && !at.After(after):
			t.Errorf("row 4: created_at %s, want its own time, after %s", at, after)
		}
		if row <= 3 {
			migrated = append(migrated, at)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(migrated) != 3 || !migrated[0].Equal(migrated[1]) || !migrated[1].Equal(migrated[2]) {
		t.Errorf("migrated rows' created_at %v, want 3 equal times", migrated)
	}
	var method string
	if err := pool.QueryRow(ctx, `SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam
		WHERE c.oid = 'contacts.import_rows_created_at'::regclass`).Scan(&method); err != nil || method != "brin" {
		t.Errorf("index contacts.import_rows_created_at: %q, %v; want brin", method, err)
	}
}
