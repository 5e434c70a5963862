package store_test

import (
	"context"
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/orders/migrations"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
)

// migratedUpTo returns a database with the orders migrations before
// version applied, and its pool.
func migratedUpTo(t *testing.T, version string) (string, *pgxpool.Pool) {
	t.Helper()
	all := migrations.Set()
	old := fstest.MapFS{}
	err := fs.WalkDir(all.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") || p >= version {
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
	pool, err := db.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return url, pool
}

// TestOrderNumbersContinueAfterMigration: a database of the counter-row era
// (migrations up to 00003) goes through the per-tenant sequences (00004)
// to the counters (00007) with each tenant's numbers continuing after its
// last one, and a tenant without orders starts at 1.
func TestOrderNumbersContinueAfterMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedUpTo(t, "00004")
	busy, idle, fund := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.order_counters (tenant_id, last_number) VALUES ($1, 41)`, busy); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []uuid.UUID{busy, idle} {
		if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx, url, audit.Migrations(), migrations.Set()); err != nil {
		t.Fatal(err)
	}
	var counters *string
	if err := pool.QueryRow(ctx, `SELECT to_regclass('orders.order_counters')::text`).Scan(&counters); err != nil || counters != nil {
		t.Fatalf("order_counters still there (%v, %v)", counters, err)
	}
	s := recurringstore.New(store.New(pool))
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

// TestOrderNumbersMoveToCounters: a database of the sequence era
// (migrations up to 00006) moves to the counters table with each tenant's
// numbers continuing after the largest it may have handed out — its
// sequence's (ahead of its orders after failed writes), its largest order
// number, or a number an idempotency claim holds for a retry — and every
// orders.order_number_* sequence is dropped.
func TestOrderNumbersMoveToCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedUpTo(t, "00007")
	ahead, claimed, unused, fund := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	seq := func(tenant uuid.UUID) string { return "orders.order_number_" + hex.EncodeToString(tenant[:]) }
	batch := uuid.Must(uuid.NewV7())
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, tenant := range []uuid.UUID{ahead, claimed, unused} {
		exec(`CREATE SEQUENCE ` + seq(tenant) + ` AS bigint MINVALUE 1`)
		exec(`INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund)
		exec(`INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'Old')`, tenant, batch)
	}
	order := func(tenant uuid.UUID, number int64) {
		t.Helper()
		exec(`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor,
			total_minor, deductible_minor, has_donations, has_items, batch_id) VALUES ($1, $2, $3, 1, 'Completed', 'USD', 100, 0, 100, 100, true, false, $4)`,
			tenant, uuid.Must(uuid.NewV7()), number, batch)
	}
	// ahead: orders 1 and 2, then a number whose write failed (3).
	exec(`SELECT setval($1, 3)`, seq(ahead))
	order(ahead, 1)
	order(ahead, 2)
	// claimed: order 1, and a pending claim holding number 2 for its retry.
	exec(`SELECT setval($1, 2)`, seq(claimed))
	order(claimed, 1)
	claimKey := "retry-me"
	claimOrder := uuid.Must(uuid.NewV7())
	exec(`INSERT INTO orders.idempotency_keys (tenant_id, key, request_hash, order_id, state, lease_until, order_number)
		VALUES ($1, $2, '\x00', $3, 'pending', now() + interval '1 minute', 2)`, claimed, claimKey, claimOrder)
	// unused: a sequence made, never called, no orders.
	if err := db.Migrate(ctx, url, audit.Migrations(), migrations.Set()); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_sequences WHERE schemaname = 'orders' AND sequencename LIKE 'order\_number\_%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d order-number sequences left (%v)", left, err)
	}
	s := recurringstore.New(store.New(pool))
	// The retry of the claim gets the number it held, not a new one.
	if n, err := s.ClaimNumber(ctx, claimed, claimKey, claimOrder); err != nil || n != 2 {
		t.Errorf("claimed number after the migration %d (%v), want 2", n, err)
	}
	for _, c := range []struct {
		tenant uuid.UUID
		want   int64
	}{{ahead, 4}, {claimed, 3}, {unused, 1}, {uuid.Must(uuid.NewV7()), 1}} {
		if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General') ON CONFLICT DO NOTHING`, c.tenant, fund); err != nil {
			t.Fatal(err)
		}
		o, err := s.CreateOrder(ctx, gift(c.tenant, fund, time.Now()), actor)
		if err != nil {
			t.Fatal(err)
		}
		if o.OrderNumber != c.want {
			t.Errorf("tenant %s: first order number after the migration %d, want %d", c.tenant, o.OrderNumber, c.want)
		}
	}
}

// TestOrderNumbersPerTenant: tenants number their orders independently
// from 1, and a second store (another replica) holding blocks of its own
// never repeats a number of the first, nor runs past the tenant's counter.
func TestOrderNumbersPerTenant(t *testing.T) {
	t.Parallel()
	s, pool, a, fund := newStore(t)
	ctx := context.Background()
	b := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, b, fund); err != nil {
		t.Fatal(err)
	}
	other := store.New(pool)
	seen := map[uuid.UUID][]int64{}
	steps := []struct {
		s      *store.Store
		tenant uuid.UUID
	}{{s, a}, {s, b}, {other, a}, {s, a}, {other, b}, {other, a}, {s, a}, {s, b}, {other, a}}
	for _, st := range steps {
		o, err := st.s.CreateOrder(ctx, gift(st.tenant, fund, time.Now()), actor)
		if err != nil {
			t.Fatal(err)
		}
		seen[st.tenant] = append(seen[st.tenant], o.OrderNumber)
	}
	for tenant, nums := range seen {
		if nums[0] != 1 {
			t.Errorf("tenant %s: first order number %d, want 1", tenant, nums[0])
		}
		var last int64
		if err := pool.QueryRow(ctx, `SELECT last_value FROM orders.counters WHERE tenant_id = $1 AND name = 'order_number'`, tenant).Scan(&last); err != nil {
			t.Fatal(err)
		}
		sorted := slices.Clone(nums)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(nums) || sorted[len(sorted)-1] > last {
			t.Errorf("tenant %s: numbers %v (counter at %d): repeated, or past the counter", tenant, nums, last)
		}
	}
}

// TestInstallmentNumbers: the runner's installment takes its number from a
// reservation made before its transaction. On a pool of one connection
// (every other connection held elsewhere) it still completes: nothing
// inside the transaction asks the pool for a second one. A declined
// installment gives its number back, so the tenant's next order takes it.
func TestInstallmentNumbers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := testdb.New(t, audit.Migrations(), migrations.Set())
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	pool, err := db.Open(ctx, url+sep+"pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tenant, fund, schedule := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	today := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, 1, 1000, 'USD', 'monthly', $3, $4, 'Cash', 'active', $3, $5)`, tenant, schedule, today, fund, uuid.Must(uuid.NewV7())); err != nil {
		t.Fatal(err)
	}
	s := recurringstore.New(store.New(pool))
	charge := func(day time.Time, out recurringstore.Outcome) (bool, error) {
		c, ok, err := s.ClaimInstallment(ctx, tenant, schedule, day, time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim of %s: %v, %v", day.Format(time.DateOnly), ok, err)
		}
		return s.RecordInstallment(ctx, c, day, out)
	}
	if recorded, err := charge(today, recurringstore.Outcome{Declined: true, Reason: "card_declined"}); err != nil || recorded {
		t.Fatalf("declined installment: recorded %v, %v", recorded, err)
	}
	o, err := s.CreateOrder(ctx, gift(tenant, fund, today), actor)
	if err != nil {
		t.Fatal(err)
	}
	if o.OrderNumber != 1 {
		t.Errorf("order after a declined installment numbered %d, want 1 (the installment's number given back)", o.OrderNumber)
	}
	n := gift(tenant, fund, today.Add(24*time.Hour))
	n.ScheduleID = &schedule
	if recorded, err := charge(today.Add(24*time.Hour), recurringstore.Outcome{Order: &n}); err != nil || !recorded {
		t.Fatalf("installment: recorded %v, %v", recorded, err)
	}
	var number int64
	if err := pool.QueryRow(ctx, `SELECT order_number FROM orders.orders WHERE tenant_id = $1 AND schedule_id = $2`, tenant, schedule).Scan(&number); err != nil {
		t.Fatal(err)
	}
	if number != 2 {
		t.Errorf("installment numbered %d, want 2", number)
	}
}
