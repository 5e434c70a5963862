package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestStartAt: a reader starting at StartAt(since) reads every row that
// occurred since then and none of the older rows written before them; a
// transaction still in flight that began within the window is not passed
// over; with no row since, the start is the horizon.
//
// The start is never past the horizon, and the horizon is cluster-wide:
// while another test holds a transaction older than the old row open, the
// start is before the old row too (generous, never short). So "none of
// the older rows" is checked once the horizon has passed it, and the
// second read may begin with it.
func TestStartAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openPool(t)
	tenant := uuid.NewString()

	tx := begin(t, pool)
	record(t, ctx, tx, tenant, "old")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE audit.events SET occurred_at = occurred_at - interval '40 days' WHERE tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-30 * 24 * time.Hour)
	// The horizon is the whole server's: another test's (or other work's)
	// open transaction holds it back for as long as it runs.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		start, err := StartAt(ctx, pool, tenant, since)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readAll(t, pool, ReadQuery{After: start, TenantID: tenant})
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing since, and still read %v", entityIDs(got))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// One transaction begins (and takes its xid) while another writes and
	// commits; the first commits after the start was taken.
	open := begin(t, pool)
	record(t, ctx, open, tenant, "slow")
	tx = begin(t, pool)
	record(t, ctx, tx, tenant, "new")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	start, err := StartAt(ctx, pool, tenant, since)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The start may come before "old" too (another test's open
	// transaction holding the horizon back), and that horizon may also
	// sit between "slow" and "new" for a while: read from the start until
	// both have shown, in order, rather than until any two rows have.
	var ids string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		got, _ := readAll(t, pool, ReadQuery{After: start, TenantID: tenant})
		ids = strings.TrimPrefix(strings.Join(entityIDs(got), ","), "old,")
		if ids == "slow,new" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ids != "slow,new" {
		t.Errorf("from the start: %s, want slow,new", ids)
	}
}

// TestReadEntityFilter: EntityType and EntityID keep one entity's rows.
func TestReadEntityFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openPool(t)
	tenant := uuid.NewString()
	tx := begin(t, pool)
	for _, e := range []Entry{
		{EntityType: "Contact", EntityID: "1"}, {EntityType: "Contact", EntityID: "2"}, {EntityType: "Fund", EntityID: "1"}, {EntityType: "Contact", EntityID: "1"},
	} {
		e.TenantID, e.Action, e.Actor = tenant, Created, "system"
		if err := Record(ctx, tx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := readWant(t, pool, ReadQuery{TenantID: tenant, EntityType: "Contact", EntityID: "1"}, 2)
	if len(got) != 2 || got[0].EntityType != "Contact" || got[1].EntityID != "1" {
		t.Errorf("Contact 1: %+v", got)
	}
	got, _ = readWant(t, pool, ReadQuery{TenantID: tenant, EntityType: "Fund"}, 1)
	if len(got) != 1 || got[0].EntityType != "Fund" {
		t.Errorf("Fund: %+v", got)
	}
	if e, ok, err := Get(ctx, pool, tenant, got[0].EventID); err != nil || !ok || e.Seq != got[0].Seq {
		t.Errorf("Get = %+v, %v, %v", e, ok, err)
	}
	if _, ok, err := Get(ctx, pool, uuid.NewString(), got[0].EventID); err != nil || ok {
		t.Errorf("Get of another tenant = %v, %v", ok, err)
	}
}
