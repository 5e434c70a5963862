package importstore

import (
	"context"
	"time"

	"github.com/almoner/almoner/pkg/importrows"
)

// PruneImportRows deletes the import rows (orders.import_rows) older than
// keep (importrows.Prune). The gifts the rows recorded stay: an order's
// external id still skips a gift imported again.
func (s *Store) PruneImportRows(ctx context.Context, keep time.Duration, chunk int) (int64, error) {
	return importrows.Prune(ctx, s.pool, "orders.import_rows", keep, chunk)
}
