package db_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/pkg/testpg"
)

// TestExecModesThroughPgBouncer measures which of pgx's exec modes run
// through PgBouncer (Debian's 1.18) in transaction mode: the default,
// statements prepared by name per connection, fails as soon as two
// client connections share a server connection; PoolExecMode, the one
// ALMONER_DATABASE_POOL_MODE=transaction uses, and QueryExecModeExec do
// not (docs/scaling.md).
func TestExecModesThroughPgBouncer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	server := testdb.ServerURL()
	direct := testdb.New(t)
	b, err := testpg.StartPgBouncer(ctx, server, "transaction")
	if err != nil {
		t.Fatalf("pgbouncer (make test-pgbouncer installs it): %v", err)
	}
	t.Cleanup(b.Close)
	u, _ := url.Parse(direct)
	pooled := b.URL(server, strings.TrimPrefix(u.Path, "/"))
	tests := []struct {
		name string
		mode pgx.QueryExecMode
		ok   bool
	}{
		{"cache statement (pgx default)", pgx.QueryExecModeCacheStatement, false},
		{"cache describe (PoolExecMode)", db.PoolExecMode, true},
		{"exec", pgx.QueryExecModeExec, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(pooled)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.DefaultQueryExecMode = tc.mode
			cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error { db.RegisterUUID(c.TypeMap()); return nil }
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			err = sharedServerConns(ctx, pool)
			t.Logf("%s: %v", tc.name, err)
			if ok := err == nil; ok != tc.ok {
				t.Fatalf("through PgBouncer: %v; want success %v", err, tc.ok)
			}
		})
	}
}

// sharedServerConns runs the same statements on two client connections
// while one holds a server connection in a transaction, then on eight at
// once: PgBouncer hands the most recently used server connection out
// first, so a statement one client prepared meets the other.
func sharedServerConns(ctx context.Context, pool *pgxpool.Pool) error {
	const q = `SELECT $1::uuid, $2::text[], $3::bigint + 1`
	id := uuid.New()
	args := []any{id, []string{"a", "b"}, int64(41)}
	a, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer a.Release()
	bc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer bc.Release()
	run := func(q1 interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) error {
		rows, err := q1.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	if err := run(a); err != nil {
		return err
	}
	tx, err := bc.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	errs := []error{run(tx), run(a)}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_ = tx.Rollback(ctx)
	var wg sync.WaitGroup
	burst := make([]error, 8)
	for i := range burst {
		wg.Go(func() {
			for range 20 {
				burst[i] = errors.Join(burst[i], run(pool))
			}
		})
	}
	wg.Wait()
	return errors.Join(burst...)
}
