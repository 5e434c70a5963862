package orders

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/telemetry"
)

// ImportRowsPruneEvery is how often the runner's housekeeping prunes
// import rows (housekeeper.run), as the contacts service does by default.
const ImportRowsPruneEvery = 10 * time.Minute

// pruneImportRows deletes the import rows older than the retention, in
// chunks (importstore.PruneImportRows), counting them and logging when there
// were any. The runner's housekeeping runs it after a pass, every
// ImportRowsPruneEvery.
func (s *Service) pruneImportRows(ctx context.Context) error {
	n, err := s.imports.PruneImportRows(ctx, s.cfg.ImportRowsRetention, 0)
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

// housekeeper deletes what the service keeps for a while only, after each
// runner pass: idempotency records, and import rows past their retention;
// and it moves the tenants' rolling giving windows, folds their giving
// tallies and keeps their calendar copies.
type housekeeper struct {
	s *Service
	// pruned is when import rows were last pruned (the runner's goroutine
	// alone reads and writes it).
	pruned time.Time
}

func (r *housekeeper) run(ctx context.Context) {
	// Idempotency records are kept two days: the promise is 24 hours.
	if _, err := r.s.store.PurgeKeys(ctx, 48*time.Hour); err != nil {
		r.s.logger.ErrorContext(ctx, "purge idempotency keys", "error", err)
	}
	// The tenants' rolling giving windows move at UTC midnight: a pass
	// that finds none due costs a read of one small table.
	if n, err := r.s.store.AdvanceGivingWindows(ctx, time.Now()); err != nil && ctx.Err() == nil {
		r.s.logger.ErrorContext(ctx, "move rolling giving windows", "error", err)
	} else if n > 0 {
		r.s.logger.InfoContext(ctx, "orders: moved rolling giving windows", "tenants", n)
	}
	// The giving tallies' new rows are folded every pass: a reader sums
	// them, and a pass's worth is what it reads beyond the folded rows.
	if _, err := r.s.store.CompactGivingTallies(ctx); err != nil && ctx.Err() == nil {
		r.s.logger.ErrorContext(ctx, "compact giving tallies", "error", err)
	}
	// The calendar copies of the giving periods follow the tenants'
	// settings: a pass reads those due (GivingCalendarCheckEvery), and a
	// changed one is built in steps, within a bounded part of the pass.
	if _, err := r.s.syncGivingCalendars(ctx); err != nil && ctx.Err() == nil {
		r.s.logger.ErrorContext(ctx, "sync giving calendars", "error", err)
	}
	if _, err := r.s.buildGivingPeriods(ctx); err != nil && ctx.Err() == nil {
		r.s.logger.ErrorContext(ctx, "build giving periods", "error", err)
	}
	// Import rows are pruned every ImportRowsPruneEvery, not every pass:
	// once the rows of pruned pages are replaced by newer ones, the BRIN
	// index sends a prune through most of the table even when nothing is
	// due (migration 00013), and rows a few minutes past the retention
	// harm nobody.
	if r.pruned.IsZero() || time.Since(r.pruned) >= ImportRowsPruneEvery {
		r.pruned = time.Now()
		if err := r.s.pruneImportRows(ctx); err != nil && ctx.Err() == nil {
			r.s.logger.ErrorContext(ctx, "prune import rows", "error", err)
		}
	}
}
