package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PipelinedTx is a transaction that pays no round trip of its own: BEGIN
// travels in front of the first batch sent on it and COMMIT behind the
// last (CommitBatch). pgx (5.12) pipelines the BEGIN (Batch.BeginTx) but
// its Tx commits with a round trip of its own, and a deferred Rollback
// after a COMMIT sent in a batch would cost one more. A write path that reads, decides in Go and then
// writes costs two round trips instead of four (BEGIN, read, write,
// COMMIT), and every round trip is a wake-up of the server process and of
// ours on a busy machine (docs/performance.md).
//
// Read every batch's results and Close them before sending the next batch
// or closing the transaction. Close always ends the transaction: it rolls
// back whatever was not committed by CommitBatch and returns the
// connection to the pool.
type PipelinedTx struct {
	conn      *pgxpool.Conn
	begun     bool
	committed bool
}

// errTxAborted is the answer to CommitBatch on a transaction that an
// earlier statement already failed: PostgreSQL would answer that COMMIT
// with a ROLLBACK and no error.
var errTxAborted = errors.New("transaction aborted by an earlier error")

// BeginPipelined takes a connection from pool for a pipelined transaction;
// nothing is sent yet.
func BeginPipelined(ctx context.Context, pool *pgxpool.Pool) (*PipelinedTx, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire connection: %w", err)
	}
	return &PipelinedTx{conn: c}, nil
}

// SendBatch sends b in the transaction, opening it first when this is the
// first batch. The results are b's own, in order.
func (t *PipelinedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.send(ctx, b, false)
}

// CommitBatch sends b and COMMIT in one round trip. The results are b's;
// their Close returns the commit's error, so the transaction is committed
// exactly when that Close returns nil.
func (t *PipelinedTx) CommitBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.send(ctx, b, true)
}

func (t *PipelinedTx) send(ctx context.Context, b *pgx.Batch, commit bool) pgx.BatchResults {
	if t.conn == nil {
		return pgx.FailedBatchResults(b, errors.New("pipelined transaction is closed"))
	}
	if t.committed {
		return pgx.FailedBatchResults(b, errors.New("pipelined transaction is already committed"))
	}
	if t.conn.Conn().PgConn().TxStatus() == 'E' {
		return pgx.FailedBatchResults(b, errTxAborted)
	}
	q := make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+2)
	opening := !t.begun
	if opening {
		q = append(q, &pgx.QueuedQuery{SQL: "BEGIN"})
	}
	q = append(q, b.QueuedQueries...)
	if commit {
		q = append(q, &pgx.QueuedQuery{SQL: "COMMIT"})
		t.committed = true
	}
	t.begun = true
	br := t.conn.SendBatch(ctx, &pgx.Batch{QueuedQueries: q})
	if opening {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return pgx.FailedBatchResults(b, fmt.Errorf("begin: %w", err))
		}
	}
	return br
}

// Close rolls back what was not committed and releases the connection. It
// returns the rollback's error, if one was needed and failed; the
// connection is then discarded by the pool.
func (t *PipelinedTx) Close(ctx context.Context) error {
	if t.conn == nil {
		return nil
	}
	c := t.conn
	t.conn = nil
	defer c.Release()
	pc := c.Conn().PgConn()
	if pc.IsBusy() || pc.TxStatus() == 'I' {
		// Busy: results were left unread; the pool discards the
		// connection, which ends the transaction with it.
		return nil
	}
	if _, err := pc.Exec(context.WithoutCancel(ctx), "ROLLBACK").ReadAll(); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}
