package orders

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/telemetry"
)

// ImportRowsPruneEvery is how often the runner's housekeeping prunes
// import rows (Runner.housekeep), as the contacts service does by default.
const ImportRowsPruneEvery = 10 * time.Minute

// pruneImportRows deletes the import rows older than the retention, in
// chunks (store.PruneImportRows), counting them and logging when there
// were any. The runner's housekeeping runs it after a pass, every
// ImportRowsPruneEvery.
func (s *Service) pruneImportRows(ctx context.Context) error {
	n, err := s.store.PruneImportRows(ctx, s.cfg.ImportRowsRetention, 0)
	importRowsPruned.Add(float64(n))
	if n > 0 {
		s.logger.InfoContext(ctx, "orders: pruned import rows", "count", n, "retention", s.cfg.ImportRowsRetention.String())
	}
	return err
}

// importRowsPruned counts the import rows the prune deleted.
var importRowsPruned = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "almoner_orders_import_rows_pruned_total",
	Help: "Import rows (orders.import_rows) deleted once older than ALMONER_IMPORT_ROWS_RETENTION.",
})

func init() { telemetry.Register(importRowsPruned) }
