package orders

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/telemetry"
)

// The retention of import rows (ALMONER_IMPORT_ROWS_RETENTION): how long
// orders.import_rows keeps the outcome of an imported gift row, which
// answers the batch when a resumed import sends it again. The imports
// service reads the same setting and refuses to resume an import that
// started longer ago (docs/imports.md, Housekeeping); the contacts service
// reads it for its own import rows. The three must be given the same
// value.
const (
	DefaultImportRowsRetention = 30 * 24 * time.Hour
	// MinImportRowsRetention: a day. An import resumes only within the
	// retention (less an hour), so it must be well over the longest an
	// import runs: a million rows take minutes, but a service down for
	// hours holds an import back, and an operator should have a working
	// day to bring it back before the import fails for good.
	MinImportRowsRetention = 24 * time.Hour
	// MaxImportRowsRetention: a year. Nothing but a resume reads the rows,
	// so a longer one only grows the table; the bound also catches a unit
	// typed wrong (720000h for 720h).
	MaxImportRowsRetention = 365 * 24 * time.Hour
)

// ImportRowsPruneEvery is how often the runner's housekeeping prunes
// import rows (Runner.housekeep), as the contacts service does by default.
const ImportRowsPruneEvery = 10 * time.Minute

// importRowsRetention reads ALMONER_IMPORT_ROWS_RETENTION within its
// bounds.
func importRowsRetention(c config.Source) (time.Duration, error) {
	d, err := c.Duration("ALMONER_IMPORT_ROWS_RETENTION", DefaultImportRowsRetention)
	if err != nil {
		return 0, err
	}
	if d < MinImportRowsRetention || d > MaxImportRowsRetention {
		return 0, fmt.Errorf("ALMONER_IMPORT_ROWS_RETENTION=%s: must be between %s and %s (docs/imports.md, Housekeeping)",
			d, MinImportRowsRetention, MaxImportRowsRetention)
	}
	return d, nil
}

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
