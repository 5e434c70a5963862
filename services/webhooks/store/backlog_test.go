package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/webhooks/migrations"
)

// TestRecoveryBacklogWaitsForConcurrentReplay: a replay that starts while
// another replay of the same tenant is queued but uncommitted waits for it
// and then counts its deliveries, so two calls that each fit under the cap
// alone cannot pass it together.
func TestRecoveryBacklogWaitsForConcurrentReplay(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool)
	tenant := uuid.New()
	ep, err := s.CreateEndpoint(ctx, testEndpoint(tenant), "test")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 10
	six := func() []NewDelivery {
		out := make([]NewDelivery, 6)
		for i := range out {
			out[i] = NewDelivery{EventID: uuid.New(), Event: "contact.created", Body: []byte(`{}`), OccurredAt: time.Now()}
		}
		return out
	}

	// A first replay past its check and insert, uncommitted.
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	if err := checkBacklog(ctx, first, tenant, 6, limit); err != nil {
		t.Fatalf("first replay's check: %v", err)
	}
	if _, err := first.Exec(ctx, `INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, kind)
		SELECT $1, gen_random_uuid(), $2, gen_random_uuid(), 'contact.created', '{}', now(), 'replay' FROM generate_series(1, 6)`, tenant, ep.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.EnqueueReplay(ctx, tenant, ep.ID, six(), limit); done <- err }()
	waitForLockWait(t, pool)
	select {
	case err := <-done:
		t.Fatalf("the second replay did not wait for the first: %v", err)
	default:
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var b *BacklogError
	if err := <-done; !errors.As(err, &b) || b.Pending != 6 || b.Adding != 6 || b.Limit != limit {
		t.Errorf("second replay = %v, want a BacklogError of 6 pending, 6 more, limit 10", err)
	}
	// A deleted endpoint's pending deliveries are never sent: they leave
	// the backlog.
	if err := s.DeleteEndpoint(ctx, tenant, ep.ID, "test"); err != nil {
		t.Fatal(err)
	}
	ep2, err := s.CreateEndpoint(ctx, testEndpoint(tenant), "test")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.EnqueueReplay(ctx, tenant, ep2.ID, six(), limit); err != nil || n != 6 {
		t.Errorf("replay after the endpoint with the backlog was deleted = %d, %v; want 6", n, err)
	}
	// Another tenant has a backlog of its own; no limit counts nothing.
	if _, err := s.EnqueueReplay(ctx, uuid.New(), ep2.ID, six(), limit); err != nil {
		t.Errorf("another tenant's replay: %v", err)
	}
	if n, err := s.EnqueueReplay(ctx, tenant, ep2.ID, six(), 0); err != nil || n != 6 {
		t.Errorf("unlimited replay = %d, %v", n, err)
	}
}
