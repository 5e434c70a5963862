package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
)

func pipelinedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	// One connection: a transaction left open would make the next
	// acquire of the test wait, so leaks show as hangs, not passes.
	pool, err := db.Open(ctx, testdb.New(t)+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY CHECK (id > 0))`); err != nil {
		t.Fatal(err)
	}
	return pool
}

func rowsOf(t *testing.T, pool *pgxpool.Pool) []int {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT id FROM t ORDER BY id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestPipelinedTx: what a pipelined transaction writes is committed when,
// and only when, its commit batch closes without error; every way of
// failing leaves nothing and gives the connection back idle.
func TestPipelinedTx(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		run   func(tx *db.PipelinedTx) error
		want  []int
		fails bool
	}{
		{"read then commit", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (1)`)
			b.Queue(`SELECT txid_current_if_assigned() IS NOT NULL`)
			br := tx.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				return err
			}
			var inTx bool
			if err := br.QueryRow().Scan(&inTx); err != nil {
				return err
			}
			if err := br.Close(); err != nil {
				return err
			}
			if !inTx {
				return errors.New("the first batch did not run in a transaction")
			}
			b = &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (2)`)
			return tx.CommitBatch(ctx, b).Close()
		}, []int{1, 2}, false},
		{"commit alone opens and commits", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (3)`)
			return tx.CommitBatch(ctx, b).Close()
		}, []int{3}, false},
		{"no commit rolls back", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (4)`)
			return tx.SendBatch(ctx, b).Close()
		}, nil, false},
		{"failing statement in the commit batch", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (5)`)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			b = &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (-1)`)
			return tx.CommitBatch(ctx, b).Close()
		}, nil, true},
		{"earlier failure ignored by the caller", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (6)`)
			b.Queue(`INSERT INTO t VALUES (-1)`)
			_ = tx.SendBatch(ctx, b).Close()
			b = &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (7)`)
			return tx.CommitBatch(ctx, b).Close()
		}, nil, true},
		{"failure at commit (deferred constraint)", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`CREATE TEMP TABLE d (id int UNIQUE DEFERRABLE INITIALLY DEFERRED) ON COMMIT DROP`)
			b.Queue(`INSERT INTO d VALUES (1), (1)`)
			b.Queue(`INSERT INTO t VALUES (8)`)
			return tx.CommitBatch(ctx, b).Close()
		}, nil, true},
		{"results left unread", func(tx *db.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO t VALUES (9)`)
			_ = tx.SendBatch(ctx, b)
			return errors.New("gave up")
		}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := pipelinedPool(t)
			tx, err := db.BeginPipelined(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			runErr := c.run(tx)
			if err := tx.Close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			if (runErr != nil) != c.fails {
				t.Errorf("run: %v, want an error: %v", runErr, c.fails)
			}
			if got := rowsOf(t, pool); len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) {
				t.Errorf("rows %v, want %v", got, c.want)
			}
			// Close rolled back on the same connection rather than leaving
			// the pool to discard it, except when results were left unread.
			want := int64(1)
			if c.name == "results left unread" {
				want = 2
			}
			if n := pool.Stat().NewConnsCount(); n != want {
				t.Errorf("%d connections opened, want %d", n, want)
			}
		})
	}
}

// TestPipelinedTxAfterCommit: a batch after the commit is refused, not run
// outside the transaction.
func TestPipelinedTxAfterCommit(t *testing.T) {
	ctx := context.Background()
	pool := pipelinedPool(t)
	tx, err := db.BeginPipelined(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Close(ctx) }()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO t VALUES (1)`)
	if err := tx.CommitBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	b = &pgx.Batch{}
	b.Queue(`INSERT INTO t VALUES (2)`)
	if err := tx.SendBatch(ctx, b).Close(); err == nil {
		t.Error("a batch after the commit was accepted")
	}
	if err := tx.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, pool); len(got) != 1 || got[0] != 1 {
		t.Errorf("rows %v, want [1]", got)
	}
}
