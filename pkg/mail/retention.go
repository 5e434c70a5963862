package mail

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
)

// DefaultRetention is how long a sent message stays in the outbox
// (ALMONER_MAIL_RETENTION): long enough to answer "did the receipt go
// out?" for a month, short enough that the queue does not become an
// archive of letters, PDFs and reset links.
const DefaultRetention = 30 * 24 * time.Hour

// pruneBatch is how many rows one DELETE removes: each is its own short
// statement, so pruning a backlog never holds a long transaction.
const pruneBatch = 1000

// Prune deletes the messages sent before before, a batch at a time, and
// returns how many went. Failed messages stay (an operator reads them, and
// a letter run's document includes its failed letters) and so do pending
// ones. It stops early, with what it deleted so far, when ctx ends.
func Prune(ctx context.Context, pool *pgxpool.Pool, before time.Time) (int64, error) {
	n, err := db.ExecBatches(ctx, pool, `DELETE FROM mail.outbox WHERE id IN (
		SELECT id FROM mail.outbox WHERE sent_at < $1 ORDER BY sent_at LIMIT $2)`, pruneBatch, before)
	if err != nil {
		return n, fmt.Errorf("mail: prune sent messages: %w", err)
	}
	return n, nil
}
