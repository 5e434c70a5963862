package audit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

func openPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, Migrations()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func record(t *testing.T, ctx context.Context, tx pgx.Tx, tenant, entityID string) {
	t.Helper()
	if err := Record(ctx, tx, Entry{TenantID: tenant, EntityType: "Contact", EntityID: entityID, Action: Created, Actor: "system"}); err != nil {
		t.Fatal(err)
	}
}

func begin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func entityIDs(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EntityID
	}
	return out
}

// readAll reads from rq.After until a page comes back empty.
func readAll(t *testing.T, pool *pgxpool.Pool, rq ReadQuery) ([]Event, Cursor) {
	t.Helper()
	var out []Event
	for {
		p, err := Read(context.Background(), pool, rq)
		if err != nil {
			t.Fatal(err)
		}
		if !rq.After.Less(p.Next) && len(p.Events) > 0 {
			t.Fatalf("cursor did not advance: %v → %v", rq.After, p.Next)
		}
		out = append(out, p.Events...)
		rq.After = p.Next
		if len(p.Events) == 0 {
			return out, rq.After
		}
	}
}

// readWant reads until want rows have arrived. The horizon is cluster-wide:
// a transaction held open by another test (this package's own tests do it
// on purpose) delays rows for a moment, never reorders or drops them.
func readWant(t *testing.T, pool *pgxpool.Pool, rq ReadQuery, want int) ([]Event, Cursor) {
	t.Helper()
	var out []Event
	deadline := time.Now().Add(2 * time.Minute)
	for len(out) < want && time.Now().Before(deadline) {
		got, cur := readAll(t, pool, rq)
		out = append(out, got...)
		rq.After = cur
		if len(out) < want {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Nothing more may follow.
	got, cur := readAll(t, pool, rq)
	return append(out, got...), cur
}

func TestCursorText(t *testing.T) {
	t.Parallel()
	for _, c := range []Cursor{{}, {XID: 1, ID: 2}, {XID: 1<<64 - 1, ID: 1<<63 - 1}} {
		got, err := ParseCursor(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCursor(%q) = %v, %v", c.String(), got, err)
		}
	}
	for _, bad := range []string{"x", "1", "1:", ":1", "-1:1", "1:-1", "1:2:3", "a:b"} {
		if _, err := ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add("")
	f.Add("12:34")
	f.Add("18446744073709551615:9223372036854775807")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			return
		}
		again, err := ParseCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("%q → %v does not round-trip: %v, %v", s, c, again, err)
		}
	})
}

// TestReadWaitsForOlderTransaction: a transaction that wrote first commits
// last. A reader ordering by id alone would read the later row, move its
// cursor past the earlier id and never see that row; Read holds both back
// until the older transaction ends.
func TestReadWaitsForOlderTransaction(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()

	older := begin(t, pool)
	record(t, ctx, older, tenant, "older") // smaller id, older xid, still open

	newer := begin(t, pool)
	record(t, ctx, newer, tenant, "newer")
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	got, cur := readAll(t, pool, ReadQuery{TenantID: tenant})
	if len(got) != 0 {
		t.Fatalf("read %v while an older writer is open", entityIDs(got))
	}
	if err := older.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = readWant(t, pool, ReadQuery{TenantID: tenant, After: cur}, 2)
	if fmt.Sprint(entityIDs(got)) != "[older newer]" {
		t.Fatalf("after commit read %v, want [older newer]", entityIDs(got))
	}
}

// TestReadOrdersByTransaction: a transaction that took its xid first but
// wrote its row last (larger id) is still read in its place, once.
func TestReadOrdersByTransaction(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()

	early := begin(t, pool)
	if _, err := early.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil { // takes its xid now
		t.Fatal(err)
	}
	late := begin(t, pool)
	record(t, ctx, late, tenant, "late-xid-small-id")
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, cur := readAll(t, pool, ReadQuery{TenantID: tenant})
	if len(got) != 0 {
		t.Fatalf("read %v below an open older transaction", entityIDs(got))
	}
	record(t, ctx, early, tenant, "early-xid-large-id")
	if err := early.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = readWant(t, pool, ReadQuery{TenantID: tenant, After: cur}, 2)
	if fmt.Sprint(entityIDs(got)) != "[early-xid-large-id late-xid-small-id]" {
		t.Fatalf("read %v", entityIDs(got))
	}
	if got[0].Seq < got[1].Seq {
		t.Fatalf("expected the early transaction's row to have the larger id: %d, %d", got[0].Seq, got[1].Seq)
	}
}

// TestReadConcurrentWritersExactlyOnce runs writers that hold transactions
// open for random times (some roll back) while a reader polls with a small
// page; every committed row must be read exactly once, in cursor order.
func TestReadConcurrentWritersExactlyOnce(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()

	const writers, txPerWriter = 6, 25
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range txPerWriter {
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				for j := range rng.IntN(3) + 1 {
					if err := Record(ctx, tx, Entry{TenantID: tenant, EntityType: "Contact",
						EntityID: fmt.Sprintf("w%d-t%d-r%d", w, i, j), Action: Created, Actor: "system"}); err != nil {
						t.Error(err)
					}
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				}
				// Hold some transactions open while others commit.
				time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
				if rng.IntN(8) == 0 {
					_ = tx.Rollback(ctx)
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	seen := map[string]int{}
	var order []Cursor
	cur := Cursor{}
	poll := func() int {
		p, err := Read(ctx, pool, ReadQuery{TenantID: tenant, After: cur, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Events {
			seen[e.EventID]++
			order = append(order, Cursor{XID: e.XID, ID: e.Seq})
		}
		if p.Next.Less(cur) {
			t.Fatalf("cursor went back: %v → %v", cur, p.Next)
		}
		cur = p.Next
		return len(p.Events)
	}
	running := true
	for running {
		select {
		case <-done:
			running = false
		default:
			poll()
			time.Sleep(time.Millisecond)
		}
	}
	// Drain: transactions of other tests on the same server can hold the
	// horizon back for a moment, so wait until every committed row is in.
	var committed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM audit.events WHERE tenant_id = $1`, tenant).Scan(&committed); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(seen) < committed && time.Now().Before(deadline) {
		if poll() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(seen) != committed {
		t.Fatalf("read %d distinct rows, %d committed (a transaction held open elsewhere on the server holds the horizon back: %s)",
			len(seen), committed, oldestTransaction(t, pool))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("row %s read %d times", id, n)
		}
	}
	for i := 1; i < len(order); i++ {
		if !order[i-1].Less(order[i]) {
			t.Fatalf("rows out of cursor order at %d: %v then %v", i, order[i-1], order[i])
		}
	}
	if committed < writers*txPerWriter/2 {
		t.Fatalf("only %d rows committed; the test did too little", committed)
	}
}

func TestReadFilters(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	ctx := context.Background()
	a, b := uuid.NewString(), uuid.NewString()
	err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		for i, e := range []Entry{
			{TenantID: a, EntityType: "Contact", EntityID: "1", Action: Created},
			{TenantID: b, EntityType: "Contact", EntityID: "2", Action: Created},
			{TenantID: a, EntityType: "Contact", EntityID: "1", Action: Updated, Changes: map[string]Change{"firstName": {Old: "A", New: "B"}}},
			{TenantID: a, EntityType: "OrderPayment", EntityID: "p", Action: Created},
		} {
			e.Actor = fmt.Sprintf("actor-%d", i)
			if err := Record(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readWant(t, pool, ReadQuery{TenantID: a, Events: []string{"contact.updated", "order_payment.created"}}, 2)
	if len(got) != 2 || got[0].Event != "contact.updated" || got[1].Event != "order_payment.created" {
		t.Fatalf("filtered read = %+v", got)
	}
	if string(got[0].Changes) != `{"firstName": {"new": "B", "old": "A"}}` || got[0].TenantID != a || got[0].Actor != "actor-2" {
		t.Errorf("row = %+v (changes %s)", got[0], got[0].Changes)
	}
	// A page shorter than the limit moves the cursor to the horizon, past
	// rows the filter skipped, so the next call does not scan them again.
	p, err := Read(ctx, pool, ReadQuery{TenantID: b, Events: []string{"contact.deleted"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 0 || !got[1].cursor().Less(p.Next) {
		t.Errorf("empty filtered page: next %v, last row %v", p.Next, got[1].cursor())
	}
	all, _ := readWant(t, pool, ReadQuery{Limit: 1, AllTenants: true}, 4)
	if len(all) != 4 {
		t.Errorf("unfiltered read %d rows", len(all))
	}
	// A query that names no tenant reads nothing unless it asks for all.
	if p, err := Read(ctx, pool, ReadQuery{Events: []string{"contact.updated"}}); !errors.Is(err, ErrNoTenant) || len(p.Events) != 0 {
		t.Errorf("read without a tenant: %d rows, %v; want ErrNoTenant", len(p.Events), err)
	}
}

func (e Event) cursor() Cursor { return Cursor{XID: e.XID, ID: e.Seq} }

func TestListEntity(t *testing.T) {
	t.Parallel()
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()
	for i := range 5 {
		err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
			action := Updated
			if i == 0 {
				action = Created
			}
			return Record(ctx, tx, Entry{TenantID: tenant, EntityType: "Contact", EntityID: "42", Action: action,
				Changes: map[string]Change{"n": {Old: i - 1, New: i}}, Actor: "system"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := CountEntity(ctx, pool, tenant, "Contact", "42")
	if err != nil || n != 5 {
		t.Fatalf("count = %d, %v", n, err)
	}
	first, err := ListEntity(ctx, pool, EntityQuery{TenantID: tenant, EntityType: "Contact", EntityID: "42", Limit: 2})
	if err != nil || len(first) != 2 || first[0].Seq < first[1].Seq {
		t.Fatalf("first page = %+v, %v", first, err)
	}
	next, err := ListEntity(ctx, pool, EntityQuery{TenantID: tenant, EntityType: "Contact", EntityID: "42", Limit: 10, BeforeSeq: first[1].Seq})
	if err != nil || len(next) != 3 || next[2].Action != Created || next[2].Changes != nil {
		t.Fatalf("next page = %+v, %v", next, err)
	}
	byOffset, err := ListEntity(ctx, pool, EntityQuery{TenantID: tenant, EntityType: "Contact", EntityID: "42", Limit: 2, Offset: 2})
	if err != nil || len(byOffset) != 2 || byOffset[0].Seq != next[0].Seq {
		t.Fatalf("offset page = %+v, %v", byOffset, err)
	}
}

// oldestTransaction describes the oldest open transaction of the server,
// for a failure message.
func oldestTransaction(t *testing.T, pool *pgxpool.Pool) string {
	var desc string
	err := pool.QueryRow(context.Background(), `
		SELECT coalesce(datname, '') || ' ' || state || ' since ' || (now() - xact_start)::text
		FROM pg_stat_activity WHERE backend_xid IS NOT NULL OR backend_xmin IS NOT NULL
		ORDER BY xact_start LIMIT 1`).Scan(&desc)
	if err != nil {
		return err.Error()
	}
	return desc
}
