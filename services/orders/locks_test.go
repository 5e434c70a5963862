package orders

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDetachRacingMerge: marking a contact's default method detached
// (after the processor let go of it, with no transaction open) while a
// merge of that contact runs neither deadlocks nor misses the method:
// the detach takes the contact's lock (shared, as every write of a
// contact's row does) before the method's, so it waits for the merge,
// and then detaches the method where the merge moved it, passing the
// survivor's default on. It locked only the method, and held it across
// the processor's call: a merge holding the contact's lock that had
// locked the other method deadlocked with it (PostgreSQL aborted the
// merge after deadlock_timeout, a 500).
func TestDetachRacingMerge(t *testing.T) {
	t.Parallel()
	f := newMoveFixture(t)
	ctx := context.Background()
	const dup, surv = 42, 41
	// The duplicate's methods: pm_a, the older, first in the table; pm_b
	// its default.
	for _, m := range []struct {
		id  string
		def bool
		at  string
	}{{"pm_a", false, "2025-01-01"}, {"pm_b", true, "2025-06-01"}} {
		if _, err := f.pool.Exec(ctx, `INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, is_default, created_at)
			VALUES ($1, $2, $3, 'stripe', 'test', 'cus_1', 'card', $4, $5)`, f.tenant, m.id, dup, m.def, m.at); err != nil {
			t.Fatal(err)
		}
	}
	st := f.moves.s.store
	start := make(chan struct{})
	var wg sync.WaitGroup
	var detachErr, moveErr error
	wg.Go(func() { <-start; detachErr = st.MarkMethodDetached(ctx, f.tenant, dup, "pm_b", "test") })
	wg.Go(func() { <-start; _, moveErr = f.move(dup, surv) })
	close(start)
	wg.Wait()
	if detachErr != nil || moveErr != nil {
		t.Fatalf("detach: %v; merge: %v", detachErr, moveErr)
	}
	rows, err := f.pool.Query(ctx, `SELECT id, contact_id, is_default, detached_at IS NOT NULL FROM orders.payment_methods WHERE tenant_id = $1 ORDER BY id`, f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	type method struct {
		id                 string
		contact            int64
		isDefault, removed bool
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (method, error) {
		var m method
		return m, r.Scan(&m.id, &m.contact, &m.isDefault, &m.removed)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []method{{"pm_a", surv, true, false}, {"pm_b", surv, false, true}}
	if !slices.Equal(got, want) {
		t.Errorf("methods after the detach and the merge = %+v, want %+v", got, want)
	}
}
