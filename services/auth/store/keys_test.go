package store

import (
	"bytes"
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
	defer first.Rollback(ctx) //nolint:errcheck // the test commits or fails; a rollback after that is a no-op
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

// TestTouchKeysLocksInKeyOrder: TouchKeys locks the keys it moves in key
// order, whatever the order of the uses (a replica's tracker hands them
// over in map order). Locked in the given order, two replicas' flushes of
// the same two keys in opposite orders deadlocked: each held one key and
// waited for the other, and PostgreSQL aborted one after deadlock_timeout.
func TestTouchKeysLocksInKeyOrder(t *testing.T) {
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
	low, err := s.CreateKey(ctx, testKey(tn.ID), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	high, err := s.CreateKey(ctx, testKey(tn.ID), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Compare(low.ID[:], high.ID[:]) > 0 {
		low, high = high, low
	}
	// The lower key's row goes after the higher's in the table, so the
	// uses' order (high, low) is also the order of a scan of the table.
	if _, err := pool.Exec(ctx, `UPDATE auth.api_keys SET name = 'low' WHERE tenant_id = $1 AND id = $2`, tn.ID, low.ID); err != nil {
		t.Fatal(err)
	}

	// The other replica's flush, in key order: it holds the lower key.
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx) //nolint:errcheck // the test commits or fails; a rollback after that is a no-op
	if _, err := other.Exec(ctx, `SET LOCAL deadlock_timeout = '100ms'`); err != nil {
		t.Fatal(err)
	}
	touch := func(id uuid.UUID) error {
		_, err := other.Exec(ctx, `UPDATE auth.api_keys SET last_used_at = now() WHERE tenant_id = $1 AND id = $2`, tn.ID, id)
		return err
	}
	if err := touch(low.ID); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	done := make(chan error, 1)
	go func() {
		done <- s.TouchKeys(ctx, []KeyUse{{TenantID: tn.ID, KeyID: high.ID, At: at}, {TenantID: tn.ID, KeyID: low.ID, At: at}})
	}()
	waitForLockWait(t, pool)
	if err := touch(high.ID); err != nil {
		t.Errorf("the other flush, locking the higher key: %v", err)
		_ = other.Rollback(ctx)
	} else if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("TouchKeys: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM auth.api_keys WHERE tenant_id = $1 AND last_used_at = $2`, tn.ID, at).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d keys touched at %v, want 2", n, at)
	}
}
