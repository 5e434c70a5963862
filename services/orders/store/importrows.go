package store

import (
	"context"
	"fmt"
	"time"
)

// PruneChunk is the most import rows one statement of PruneImportRows
// deletes: a statement holds its row locks and its WAL until it commits,
// so a chunk keeps each one short (tens of milliseconds) however many rows
// are due.
const PruneChunk = 10_000

// PruneImportRows deletes the import rows (orders.import_rows) of every
// tenant older than keep, chunk rows a statement (PruneChunk when chunk
// <= 0), until none is left or ctx ends, and returns how many it deleted
// (those of the statements that committed, also when it returns an error).
// The imports service refuses to resume an import that started longer
// than keep ago (docs/imports.md, Housekeeping), so no batch is sent again
// for a row pruned here. The gifts the rows recorded stay: an order's
// external id still skips a gift imported again.
func (s *Store) PruneImportRows(ctx context.Context, keep time.Duration, chunk int) (int64, error) {
	if chunk <= 0 {
		chunk = PruneChunk
	}
	var total int64
	for ctx.Err() == nil {
		// By ctid: the rows the BRIN scan found, deleted without a second
		// lookup through the primary key. Replicas pruning at once both
		// pick some of the same rows; the second waits for the first and
		// passes over what it deleted.
		tag, err := s.pool.Exec(ctx, `DELETE FROM orders.import_rows WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM orders.import_rows WHERE created_at < now() - make_interval(secs => $1) LIMIT $2))`,
			keep.Seconds(), chunk)
		if err != nil {
			return total, fmt.Errorf("orders: prune import rows: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(chunk) {
			break
		}
	}
	return total, nil
}
