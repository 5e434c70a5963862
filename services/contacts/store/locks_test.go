package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/contacts/store"
)

// lockRowAfter is the other party of a lock-order test: a transaction
// holding contact first's row lock (as a write of first, a merge or an
// import batch would, in id order) that, once call waits for a lock, locks
// contact then's row too and commits. It answers call's error. Its own
// deadlock_timeout is short, so that it, not call (whose store would
// retry), is the one a deadlock aborts: the test then sees 40P01.
func lockRowAfter(t *testing.T, pool *pgxpool.Pool, tenant uuid.UUID, first, then int64, call func() error) error {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	lock := func(id int64) error {
		_, err := tx.Exec(ctx, `SELECT 1 FROM contacts.contacts WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id)
		return err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL deadlock_timeout = '100ms'`); err != nil {
		t.Fatal(err)
	}
	if err := lock(first); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the call returned (%v) without waiting for contact %d's lock", err, first)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never waited for a lock")
		}
	}
	if err := lock(then); err != nil {
		t.Errorf("lock contact %d while the call waits: %v", then, err)
		_ = tx.Rollback(ctx)
	} else if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return <-done
}

// related makes contacts a and b (spouses, a's relationship) and answers
// their ids: a's is the higher.
func related(t *testing.T, s *store.Store, tenant uuid.UUID) (a, b store.Contact) {
	t.Helper()
	ctx := context.Background()
	b, err := s.Create(ctx, tenant, person(1), "test")
	if err != nil {
		t.Fatal(err)
	}
	fa := person(2)
	fa.Relationships = []store.Relationship{{RelatedID: b.ID, Type: store.Spouse}}
	if a, err = s.Create(ctx, tenant, fa, "test"); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestUpdateLocksRelatedInIDOrder: an update of a contact locks it with
// its related contacts in id order, as every multi-contact write does. It
// locked itself first, so an update of the higher of two spouses
// deadlocked with anything holding the lower one's lock and then wanting
// the higher's (the other spouse's update, a merge, an import batch):
// PostgreSQL aborted one after deadlock_timeout.
func TestUpdateLocksRelatedInIDOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	s := store.New(pool)
	tenant := uuid.New()
	a, b := related(t, s, tenant)
	f := a.Fields
	f.Notes = "moved house"
	err := lockRowAfter(t, pool, tenant, b.ID, a.ID, func() error {
		_, err := s.Update(ctx, tenant, a.ID, f, "test", nil)
		return err
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	got, err := s.Get(ctx, tenant, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Notes != "moved house" {
		t.Errorf("notes %q after the update", got.Notes)
	}
}

// TestFinishMergeLocksRelatedInIDOrder: finishing a merge locks the pair
// and their related contacts in one pass in id order. It locked the pair
// first, so a merge whose duplicate has a related contact with a lower id
// deadlocked with a write of that contact (holding it, then wanting the
// duplicate).
func TestFinishMergeLocksRelatedInIDOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	s := store.New(pool)
	tenant := uuid.New()
	dup, rel := related(t, s, tenant)
	surv, err := s.Create(ctx, tenant, person(3), "test")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.BeginMerge(ctx, store.Merge{Tenant: tenant, Survivor: surv.ID, Duplicate: dup.ID, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	err = lockRowAfter(t, pool, tenant, rel.ID, dup.ID, func() error {
		_, err := s.FinishMerge(ctx, m)
		return err
	})
	if err != nil {
		t.Fatalf("finish merge: %v", err)
	}
	got, err := s.Get(ctx, tenant, rel.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Relationships) != 1 || got.Relationships[0].RelatedID != surv.ID {
		t.Errorf("the related contact's relationships after the merge: %+v", got.Relationships)
	}
}
