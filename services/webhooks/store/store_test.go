package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/webhooks/migrations"
)

func testEndpoint(tenantID uuid.UUID) Endpoint {
	return Endpoint{TenantID: tenantID, ID: uuid.Must(uuid.NewV7()), Name: "hook", URL: "https://8.8.8.8/",
		EventTypes: []string{"contact.created"}, SecretBox: []byte("sealed")}
}

// waitForLockWait returns once some session of the database waits for a
// lock, so a test knows its second transaction is queued behind the first.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no session waits for a lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEndpointLimitWaitsForConcurrentChange: a registration, or a switch
// back on, that starts while another registration of the same tenant is
// uncommitted waits for it and then counts its endpoint, so the two cannot
// pass the limit together.
func TestEndpointLimitWaitsForConcurrentChange(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool)
	tenant := uuid.New()
	const limit = 2
	if _, err := s.CreateEndpointLimited(ctx, testEndpoint(tenant), "test", limit); err != nil {
		t.Fatal(err)
	}
	off := testEndpoint(tenant)
	if _, err := s.CreateEndpointLimited(ctx, off, "test", limit); err != nil {
		t.Fatal(err)
	}
	off.Active = false
	if _, err := s.UpdateEndpoint(ctx, off, "test", limit); err != nil {
		t.Fatal(err)
	}

	for _, second := range []struct {
		name string
		run  func() error
	}{
		{"registration", func() error { _, err := s.CreateEndpointLimited(ctx, testEndpoint(tenant), "test", limit); return err }},
		{"switch back on", func() error {
			on := off
			on.Active = true
			_, err := s.UpdateEndpoint(ctx, on, "test", limit)
			return err
		}},
	} {
		t.Run(second.name, func(t *testing.T) {
			// A first registration past its check and insert, uncommitted.
			first, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
			if err := lockTenantEndpoints(ctx, first, tenant); err != nil {
				t.Fatal(err)
			}
			if err := checkEndpointLimit(ctx, first, tenant, limit); err != nil {
				t.Fatalf("first registration's check: %v", err)
			}
			e := testEndpoint(tenant)
			if _, err := first.Exec(ctx, `INSERT INTO webhooks.endpoints (tenant_id, id, name, url, event_types, secret_box, cursor)
				VALUES ($1, $2, $3, $4, $5, $6, '')`, e.TenantID, e.ID, e.Name, e.URL, e.EventTypes, e.SecretBox); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- second.run() }()
			waitForLockWait(t, pool)
			select {
			case err := <-done:
				t.Fatalf("the second change did not wait for the first: %v", err)
			default:
			}
			if err := first.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !errors.Is(err, ErrEndpointLimit) {
				t.Errorf("second change = %v, want ErrEndpointLimit", err)
			}
			// Free the place again for the next case.
			if err := s.DeleteEndpoint(ctx, tenant, e.ID, "test"); err != nil {
				t.Fatal(err)
			}
		})
	}

	// Without a limit nothing is counted or locked.
	if _, err := s.CreateEndpoint(ctx, testEndpoint(tenant), "test"); err != nil {
		t.Errorf("unlimited registration: %v", err)
	}
}
