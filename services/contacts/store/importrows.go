package store

import (
	"context"
	"time"

	"github.com/almoner/almoner/pkg/importrows"
)

// PruneImportRows deletes the import rows (contacts.import_rows) older than
// keep (importrows.Prune).
func (s *Store) PruneImportRows(ctx context.Context, keep time.Duration, chunk int) (int64, error) {
	return importrows.Prune(ctx, s.pool, "contacts.import_rows", keep, chunk)
}
