package impersonation

import (
	"context"
	"log/slog"
	"time"
)

// DefaultSweepInterval is how often the sweeper looks for impersonations
// to end (ALMONER_IMPERSONATION_SWEEP).
const DefaultSweepInterval = 5 * time.Second

// sweepBatch is how many impersonations one transaction ends.
const sweepBatch = 100

// Sweeper ends the impersonations that stop holding (EndReason) while
// nobody makes a request with them, above all those that expire or whose
// tenant's support access runs out: a request would end them (Resolve),
// but without one their impersonation.deleted event would never be
// written and a subscriber never hear of the end.
type Sweeper struct {
	d        Deps
	interval time.Duration
	logger   *slog.Logger
}

// NewSweeper returns a sweeper that passes every interval
// (DefaultSweepInterval when not positive), at d.Now.
func NewSweeper(d Deps, interval time.Duration, logger *slog.Logger) *Sweeper {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	return &Sweeper{d: d, interval: interval, logger: logger}
}

// Run sweeps every interval until ctx ends.
func (w *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.Sweep(ctx); err != nil && ctx.Err() == nil {
				w.logger.Warn("sweep impersonations", "error", err)
			}
		}
	}
}

// Sweep ends every impersonation that no longer holds at d.Now, a batch
// per transaction, and returns how many it ended.
func (w *Sweeper) Sweep(ctx context.Context) (int, error) {
	now := w.d.Now()
	total := 0
	for {
		n, err := w.d.Store.SweepImpersonations(ctx, now, sweepBatch)
		total += n
		if err != nil || n < sweepBatch {
			return total, err
		}
	}
}
