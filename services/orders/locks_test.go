package orders

import (
	"context"
	"testing"
	"time"

	"github.com/almoner/almoner/services/orders/store"
)

// TestDetachRacingMerge: a detach of a contact's default method holds the
// contact's lock (shared, as every write of a contact's row does) from
// before it locks the method, so a merge of that contact waits for the
// whole detach instead of deadlocking with it. It locked only the method:
// the merge, holding the contact's lock and moving the duplicate's methods
// row by row, locked the other method and waited for the detached one,
// while the detach, its processor call done, passed the default to that
// other method and waited for the merge. PostgreSQL aborted the merge
// after deadlock_timeout (a 500).
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

	// The detach of pm_b, stopped in its processor call.
	atProcessor, goOn := make(chan struct{}), make(chan struct{})
	detached := make(chan error, 1)
	go func() {
		detached <- st.DetachPaymentMethod(ctx, f.tenant, dup, "pm_b", func(store.PaymentMethod) error {
			close(atProcessor)
			<-goOn
			return nil
		}, "test")
	}()
	select {
	case <-atProcessor:
	case err := <-detached:
		t.Fatalf("detach returned before its processor call: %v", err)
	}

	// The merge starts and waits for a lock the detach holds.
	moved := make(chan error, 1)
	go func() {
		_, err := f.move(dup, surv)
		moved <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-moved:
			t.Fatalf("the merge returned (%v) while the detach held its method", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the merge never waited for a lock")
		}
	}

	// The processor answers; both finish.
	close(goOn)
	if err := <-detached; err != nil {
		t.Errorf("detach: %v", err)
	}
	if err := <-moved; err != nil {
		t.Errorf("merge: %v", err)
	}
	var contact int64
	var def bool
	if err := f.pool.QueryRow(ctx, `SELECT contact_id, is_default FROM orders.payment_methods WHERE tenant_id = $1 AND id = 'pm_a'`,
		f.tenant).Scan(&contact, &def); err != nil {
		t.Fatal(err)
	}
	if contact != surv || !def {
		t.Errorf("pm_a: contact %d, default %v; want the survivor's default", contact, def)
	}
}
