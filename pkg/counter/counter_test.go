package counter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

const table = "countertest.counters"

// migrations is the table as a service's migration makes it (package doc).
var migrations = db.Migrations{Schema: "countertest", FS: fstest.MapFS{"00001_counters.sql": {Data: []byte(`-- +goose Up
CREATE TABLE countertest.counters (
    tenant_id  uuid   NOT NULL,
    name       text   NOT NULL,
    last_value bigint NOT NULL,
    PRIMARY KEY (tenant_id, name)
) WITH (fillfactor = 50);
`)}}}

func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := db.Open(context.Background(), testdb.New(t, migrations))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func lastValue(t testing.TB, pool *pgxpool.Pool, tenant uuid.UUID, name string) int64 {
	t.Helper()
	var v int64
	if err := pool.QueryRow(context.Background(), `SELECT last_value FROM `+table+` WHERE tenant_id = $1 AND name = $2`, tenant, name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNumbersPerTenant: two tenants taking numbers interleaved each count
// 1, 2, 3…, and another name of the same tenant counts on its own.
func TestNumbersPerTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New(newPool(t), table, Options{})
	a, b := uuid.New(), uuid.New()
	steps := []struct {
		tenant uuid.UUID
		name   string
		want   int64
	}{{a, "contact", 1}, {b, "contact", 1}, {b, "contact", 2}, {a, "contact", 2}, {a, "phone", 1}, {b, "contact", 3}, {a, "contact", 3}, {a, "contact", 4}}
	for i, s := range steps {
		got, err := c.Next(ctx, s.tenant, s.name)
		if err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			t.Errorf("step %d: %s of tenant %d = %d, want %d", i, s.name, slices.Index([]uuid.UUID{a, b}, s.tenant), got, s.want)
		}
	}
}

// TestReplicasNeverDuplicate: several Counters on one table (replicas),
// each with many goroutines, hand out every number of a tenant at most
// once, none beyond what the row reserved, and reserve far fewer blocks
// than numbers.
func TestReplicasNeverDuplicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	const replicas, workers, each = 4, 8, 250
	tenants := []uuid.UUID{uuid.New(), uuid.New()}
	counters := make([]*Counter, replicas)
	for i := range counters {
		counters[i] = New(pool, table, Options{})
	}
	var (
		mu  sync.Mutex
		got = map[uuid.UUID][]int64{}
		wg  sync.WaitGroup
	)
	errs := make(chan error, replicas*workers)
	for _, c := range counters {
		for w := range workers {
			wg.Go(func() {
				var mine []int64
				tenant := tenants[w%len(tenants)]
				for range each {
					n, err := c.Next(ctx, tenant, "contact")
					if err != nil {
						errs <- err
						return
					}
					mine = append(mine, n)
				}
				mu.Lock()
				got[tenant] = append(got[tenant], mine...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var refills int64
	for _, c := range counters {
		refills += c.refills.Load()
	}
	total := 0
	for _, tenant := range tenants {
		nums := got[tenant]
		total += len(nums)
		slices.Sort(nums)
		if len(nums) != replicas*workers*each/len(tenants) {
			t.Fatalf("tenant %s: %d numbers", tenant, len(nums))
		}
		for i := 1; i < len(nums); i++ {
			if nums[i] == nums[i-1] {
				t.Fatalf("tenant %s: %d handed out twice", tenant, nums[i])
			}
		}
		if last := lastValue(t, pool, tenant, "contact"); nums[0] < 1 || nums[len(nums)-1] > last {
			t.Errorf("tenant %s: numbers %d..%d outside 1..%d", tenant, nums[0], nums[len(nums)-1], last)
		}
	}
	if refills > int64(total/10) {
		t.Errorf("%d refills for %d numbers: blocks did not grow", refills, total)
	}
}

// TestBlockSizes: a tenant's first block is one number, blocks double while
// the previous one lasted well under Target, stop at MaxBlock, and fall
// back to one number after an idle spell.
func TestBlockSizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(pool, table, Options{MaxBlock: 8, Now: func() time.Time { return now }})
	tenant := uuid.New()
	// Taking 1, 2, 3… at a frozen clock: each refill reserves up to the
	// row's new last value; record it after each number.
	var lasts []int64
	for range 30 {
		if _, err := c.Next(ctx, tenant, "n"); err != nil {
			t.Fatal(err)
		}
		if v := lastValue(t, pool, tenant, "n"); len(lasts) == 0 || lasts[len(lasts)-1] != v {
			lasts = append(lasts, v)
		}
	}
	// Blocks 1, 2, 4, 8, 8, 8: last values 1, 3, 7, 15, 23, 31.
	if want := []int64{1, 3, 7, 15, 23, 31}; !slices.Equal(lasts, want) {
		t.Errorf("last values after each refill %v, want %v", lasts, want)
	}
	// Numbers 31 is in hand; take it, then an hour passes.
	if n, err := c.Next(ctx, tenant, "n"); err != nil || n != 31 {
		t.Fatalf("31st number %d (%v)", n, err)
	}
	now = now.Add(time.Hour)
	if n, err := c.Next(ctx, tenant, "n"); err != nil || n != 32 {
		t.Fatalf("after an hour: %d (%v)", n, err)
	}
	if v := lastValue(t, pool, tenant, "n"); v != 32 {
		t.Errorf("after an idle hour the block reached %d, want a block of 1 (32)", v)
	}
}

// TestReservation: numbers set aside are taken in order, those not taken
// go back and are handed out first, and a reservation cannot hand out
// more than it holds.
func TestReservation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New(newPool(t), table, Options{})
	tenant := uuid.New()
	r, err := c.Reserve(ctx, tenant, "phone", 3)
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(1); want <= 2; want++ {
		if n, err := r.Next(); err != nil || n != want {
			t.Fatalf("reserved number %d (%v), want %d", n, err, want)
		}
	}
	// Meanwhile another caller takes the next free number.
	if n, err := c.Next(ctx, tenant, "phone"); err != nil || n != 4 {
		t.Fatalf("number beside the reservation %d (%v), want 4", n, err)
	}
	r.Release()
	r.Release()
	if n, err := c.Next(ctx, tenant, "phone"); err != nil || n != 3 {
		t.Errorf("after release: %d (%v), want the released 3", n, err)
	}
	empty, err := c.Reserve(ctx, tenant, "phone", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := empty.Next(); !errors.Is(err, ErrExhausted) {
		t.Errorf("Next of an empty reservation: %v", err)
	}
	empty.Release()
	one, err := c.Reserve(ctx, tenant, "phone", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := one.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Next(); !errors.Is(err, ErrExhausted) {
		t.Errorf("second Next of a reservation of one: %v", err)
	}
	// A retried transaction takes the same numbers again, and only those
	// it did not take go back.
	retry, err := c.Reserve(ctx, tenant, "phone", 3)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := retry.Next()
	if _, err := retry.Next(); err != nil {
		t.Fatal(err)
	}
	retry.Rewind()
	if again, err := retry.Next(); err != nil || again != first {
		t.Errorf("after Rewind: %d (%v), want %d again", again, err, first)
	}
	retry.Release()
	if n, err := c.Next(ctx, tenant, "phone"); err != nil || n != first+1 {
		t.Errorf("after a rewound reservation took one: %d (%v), want %d", n, err, first+1)
	}
}

// TestTakeBulk: a million numbers in one statement, consecutive, beside the
// block in memory, and later numbers come after them.
func TestTakeBulk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	c := New(pool, table, Options{})
	tenant := uuid.New()
	if n, err := c.Next(ctx, tenant, "contact"); err != nil || n != 1 {
		t.Fatalf("first number %d (%v)", n, err)
	}
	before := c.refills.Load()
	first, err := c.Take(ctx, tenant, "contact", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if first != 2 || lastValue(t, pool, tenant, "contact") != 1_000_001 {
		t.Errorf("bulk take starts at %d, row at %d; want 2 and 1,000,001", first, lastValue(t, pool, tenant, "contact"))
	}
	if d := c.refills.Load() - before; d != 1 {
		t.Errorf("bulk take used %d statements, want 1", d)
	}
	if n, err := c.Next(ctx, tenant, "contact"); err != nil || n <= 1_000_001 {
		t.Errorf("number after the bulk take %d (%v)", n, err)
	}
	if _, err := c.Take(ctx, tenant, "contact", 0); err == nil {
		t.Error("Take(0) accepted")
	}
}

// TestConcurrentFirstUse: many callers asking for a new tenant's numbers
// at once wait for one refill at a time instead of each reserving its own.
func TestConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New(newPool(t), table, Options{})
	tenant := uuid.New()
	var wg sync.WaitGroup
	nums := make([]int64, 50)
	for i := range nums {
		wg.Go(func() {
			n, err := c.Next(ctx, tenant, "contact")
			if err != nil {
				t.Error(err)
			}
			nums[i] = n
		})
	}
	wg.Wait()
	// One process, no numbers given back: 1..50 without a gap.
	slices.Sort(nums)
	for i, n := range nums {
		if n != int64(i+1) {
			t.Fatalf("numbers %v, want 1..%d", nums, len(nums))
		}
	}
	// Blocks of 1, 2, 4, 8, 16, 32 cover 50 callers; a slow machine may
	// see a block last long enough not to double, hence the margin.
	if r := c.refills.Load(); r > 12 {
		t.Errorf("%d refills for 50 concurrent first numbers", r)
	}
}

// TestWaitingCallerGivesUp: a caller waiting for another's refill returns
// when its context ends.
func TestWaitingCallerGivesUp(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	c := New(pool, table, Options{})
	tenant := uuid.New()
	// Hold the counter row's lock so the first caller's refill waits.
	if _, err := c.Next(context.Background(), tenant, "n"); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	if _, err := tx.Exec(context.Background(), `UPDATE `+table+` SET last_value = last_value WHERE tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	refilling := make(chan error, 1)
	go func() {
		_, err := c.Next(context.Background(), tenant, "n")
		refilling <- err
	}()
	for {
		c.mu.Lock()
		busy := c.keys[key{tenant, "n"}].wait != nil
		c.mu.Unlock()
		if busy {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Next(ctx, tenant, "n"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting caller: %v, want its deadline", err)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-refilling; err != nil {
		t.Errorf("refilling caller: %v", err)
	}
}

// TestTableName: only schema.table names reach the SQL.
func TestTableName(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("New accepted a table name with SQL in it")
		}
	}()
	New(nil, "contacts.counters; DROP TABLE x", Options{})
}

// BenchmarkTake1M is the bulk path of an import of a million rows: one
// statement reserving 1,000,000 numbers.
func BenchmarkTake1M(b *testing.B) {
	c := New(newPool(b), table, Options{})
	tenant := uuid.New()
	for b.Loop() {
		if _, err := c.Take(context.Background(), tenant, "contact", 1_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNext is one number at a time from a busy tenant's blocks.
func BenchmarkNext(b *testing.B) {
	c := New(newPool(b), table, Options{})
	tenant := uuid.New()
	for b.Loop() {
		if _, err := c.Next(context.Background(), tenant, "contact"); err != nil {
			b.Fatal(err)
		}
	}
}
