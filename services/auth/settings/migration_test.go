package settings

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/auth/migrations"
)

// before is the auth migrations older than name.
func before(t *testing.T, set db.Migrations, name string) db.Migrations {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(set.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") || p >= name {
			return err
		}
		b, err := fs.ReadFile(set.FS, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return db.Migrations{Schema: set.Schema, FS: out}
}

// TestMigrationKeepsExistingValues: a database upgraded from the release
// before the settings keeps each tenant's retry days (the admin command's,
// orders.recurring_settings) and time zone (the organization profile's);
// a tenant with neither has the defaults. The legacy tables are made here
// as those releases made the columns read.
func TestMigrationKeepsExistingValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.New(t, audit.Migrations(), before(t, migrations.Set(), "00010"))
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	both, zoneOnly, neither := uuid.New(), uuid.New(), uuid.New()
	for _, q := range []string{
		`CREATE SCHEMA orders`,
		`CREATE TABLE orders.recurring_settings (tenant_id uuid PRIMARY KEY, retry_days integer[] NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
		`CREATE SCHEMA reports`,
		`CREATE TABLE reports.organization_profiles (tenant_id uuid PRIMARY KEY, time_zone text NOT NULL)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []uuid.UUID{both, zoneOnly, neither} {
		if _, err := pool.Exec(ctx, `INSERT INTO auth.tenants (id, name, slug, default_currency) VALUES ($1, 'T', $2, 'EUR')`, id, "t"+id.String()[:8]+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_settings (tenant_id, retry_days) VALUES ($1, '{2,9}'), ($2, '{}')`, both, uuid.New()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO reports.organization_profiles (tenant_id, time_zone) VALUES ($1, 'Europe/Paris'), ($2, 'Asia/Tokyo')`, both, zoneOnly); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, url, migrations.Set()); err != nil {
		t.Fatal(err)
	}
	st := NewStore(pool)
	for _, c := range []struct {
		tenant uuid.UUID
		zone   string
		days   []int32
	}{
		{both, "Europe/Paris", []int32{2, 9}},
		{zoneOnly, "Asia/Tokyo", DefaultRetryDays()},
		{neither, DefaultTimeZone, DefaultRetryDays()},
	} {
		got, err := st.Get(ctx, c.tenant)
		if err != nil {
			t.Fatal(err)
		}
		if got.TimeZone != c.zone || !slices.Equal(got.RecurringRetryDays, c.days) || got.DefaultCurrency != "EUR" || got.FiscalYearStartMonth != 1 {
			t.Errorf("tenant %s after the migration = %+v, want %s %v", c.tenant, got, c.zone, c.days)
		}
	}
}
