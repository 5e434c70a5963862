package contacts

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/telemetry"
)

// pruneImportRows deletes the import rows older than the retention, in
// chunks (store.PruneImportRows), counting them and logging when there
// were any. It runs in the service's background loop with the pruning of
// rate-limit counters.
func (s *Service) pruneImportRows(ctx context.Context) error {
	n, err := s.store.PruneImportRows(ctx, s.cfg.ImportRowsRetention, 0)
	importRowsPruned.Add(float64(n))
	if n > 0 {
		s.logger.InfoContext(ctx, "contacts: pruned import rows", "count", n, "retention", s.cfg.ImportRowsRetention.String())
	}
	return err
}

// importRowsPruned counts the import rows the prune deleted.
var importRowsPruned = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "almoner_contacts_import_rows_pruned_total",
	Help: "Import rows (contacts.import_rows) deleted once older than ALMONER_IMPORT_ROWS_RETENTION.",
})

func init() { telemetry.Register(importRowsPruned) }
