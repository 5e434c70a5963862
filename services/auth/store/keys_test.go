package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/auth/migrations"
)

func testKey(tenantID uuid.UUID) APIKey {
	lookup := uuid.NewString()[:12]
	return APIKey{TenantID: tenantID, Name: "k", LookupID: lookup, KeyPrefix: "ak_test_" + lookup,
		KeyHash: []byte(lookup), Environment: "sandbox", Scopes: []string{"contacts:view"}}
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

// TestCreateKeyLimitWaitsForConcurrentCreation: a creation that starts while
// another one of the same tenant is uncommitted waits for it and then
// counts its key. Without the wait both would count the same committed keys
// and pass together; with a count taken in the locking statement the
// second would count from a snapshot older than the first's commit.
func TestCreateKeyLimitWaitsForConcurrentCreation(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool)
	tn, err := s.CreateTenant(ctx, Tenant{Name: "T", Slug: "t", Features: []string{}, DefaultCurrency: "USD"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 2
	if _, err := s.CreateKey(ctx, testKey(tn.ID), "test", limit); err != nil {
		t.Fatal(err)
	}

	// The first creation: past its check, its key inserted, not committed.
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx) //nolint:errcheck
	if err := checkKeyLimit(ctx, first, tn.ID, limit); err != nil {
		t.Fatalf("first creation's check: %v", err)
	}
	k := testKey(tn.ID)
	if _, err := first.Exec(ctx, `INSERT INTO auth.api_keys (tenant_id, id, name, lookup_id, key_prefix, key_hash, environment, scopes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, k.TenantID, uuid.New(), k.Name, k.LookupID, k.KeyPrefix, k.KeyHash, k.Environment, k.Scopes); err != nil {
		t.Fatal(err)
	}

	second := make(chan error, 1)
	go func() {
		_, err := s.CreateKey(ctx, testKey(tn.ID), "test", limit)
		second <- err
	}()
	waitForLockWait(t, pool)
	select {
	case err := <-second:
		t.Fatalf("the second creation did not wait for the first: %v", err)
	default:
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, ErrKeyLimit) {
		t.Errorf("second creation = %v, want ErrKeyLimit", err)
	}

	// Another tenant's creation does not wait for this tenant's lock.
	other, err := s.CreateTenant(ctx, Tenant{Name: "O", Slug: "o", Features: []string{}, DefaultCurrency: "USD"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := checkKeyLimit(ctx, tx, tn.ID, 100); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := s.CreateKey(cctx, testKey(other.ID), "test", limit)
		return err
	})
	if err != nil {
		t.Errorf("another tenant's creation while this tenant's lock is held: %v", err)
	}

	// Without a limit (the admin command) nothing is counted.
	if _, err := s.CreateKey(ctx, testKey(tn.ID), "test", 0); err != nil {
		t.Errorf("unlimited creation at the limit: %v", err)
	}
	if _, err := s.CreateKey(ctx, testKey(uuid.New()), "test", limit); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("creation for a tenant that does not exist = %v, want db.ErrNotFound", err)
	}
}
