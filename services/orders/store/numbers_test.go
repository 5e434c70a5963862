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
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/orders/migrations"
	"github.com/almoner/almoner/services/orders/store"
)

// TestOrderNumbersContinueAfterMigration: a database of the counter-row era
// (migrations up to 00003) moves to sequences with each tenant's numbers
// continuing after its last one, and a tenant without orders starts at 1.
func TestOrderNumbersContinueAfterMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all := migrations.Set()
	old := fstest.MapFS{}
	err := fs.WalkDir(all.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") || p >= "00004" {
			return err
		}
		b, err := fs.ReadFile(all.FS, p)
		old[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	url := testdb.New(t, audit.Migrations(), db.Migrations{Schema: all.Schema, FS: old})
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	busy, idle, fund := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.order_counters (tenant_id, last_number) VALUES ($1, 41)`, busy); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []uuid.UUID{busy, idle} {
		if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx, url, audit.Migrations(), all); err != nil {
		t.Fatal(err)
	}
	var counters *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('orders.order_counters')::text`).Scan(&counters); err != nil || counters != nil {
		t.Fatalf("order_counters still there (%v, %v)", counters, err)
	}
	s := store.New(pool)
	for _, c := range []struct {
		tenant uuid.UUID
		want   []int64
	}{{busy, []int64{42, 43}}, {idle, []int64{1, 2}}} {
		for _, want := range c.want {
			o, err := s.CreateOrder(ctx, gift(c.tenant, fund, time.Now()), actor)
			if err != nil {
				t.Fatal(err)
			}
			if o.OrderNumber != want {
				t.Errorf("tenant %s: order number %d, want %d", c.tenant, o.OrderNumber, want)
			}
		}
	}
}

// TestOrderNumbersPerTenant: tenants number their orders independently,
// and a second store (another replica) continues the same sequence.
func TestOrderNumbersPerTenant(t *testing.T) {
	t.Parallel()
	s, pool, a, fund := newStore(t)
	ctx := context.Background()
	b := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, b, fund); err != nil {
		t.Fatal(err)
	}
	other := store.New(pool)
	steps := []struct {
		s      *store.Store
		tenant uuid.UUID
		want   int64
	}{{s, a, 1}, {s, b, 1}, {other, a, 2}, {s, a, 3}, {other, b, 2}}
	for i, st := range steps {
		o, err := st.s.CreateOrder(ctx, gift(st.tenant, fund, time.Now()), actor)
		if err != nil {
			t.Fatal(err)
		}
		if o.OrderNumber != st.want {
			t.Errorf("step %d: order number %d, want %d", i, o.OrderNumber, st.want)
		}
	}
}
