package db

import (
	"context"

	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: a pool, a connection or a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ExecBatches runs sql, a statement that changes at most batch rows (its
// last parameter is the batch size), until one run changes fewer, and
// returns how many rows the runs changed in all. Housekeeping deletes use
// it: a backlog goes in short statements, never one long transaction. It
// stops early, with the count so far and no error, when ctx ends between
// runs (the next pass goes on).
func ExecBatches(ctx context.Context, q Execer, sql string, batch int, args ...any) (int64, error) {
	args = append(args[:len(args):len(args)], batch)
	var total int64
	for ctx.Err() == nil {
		tag, err := q.Exec(ctx, sql, args...)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			break
		}
	}
	return total, nil
}
