package orders

import (
	"context"
	"sync"
	"time"
)

// RunnerConfig configures the recurring charge runner.
type RunnerConfig struct {
	// Interval is the time between scans for due schedules.
	Interval time.Duration
}

// Runner charges due recurring schedules in the background.
type Runner struct {
	s      *Service
	cfg    RunnerConfig
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	logger interface {
		ErrorContext(ctx context.Context, msg string, args ...any)
	}
}

// NewRunner returns a runner on the service's store and clock.
func (s *Service) NewRunner(cfg RunnerConfig) *Runner {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	return &Runner{s: s, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), logger: s.logger}
}

// Start runs the runner until Stop.
func (r *Runner) Start() {
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 10*r.cfg.Interval)
				if _, err := r.RunOnce(ctx); err != nil {
					r.logger.ErrorContext(ctx, "recurring charge run", "err", err)
				}
				cancel()
			}
		}
	}()
}

// Stop ends the runner after its current charge.
func (r *Runner) Stop(ctx context.Context) error {
	r.once.Do(func() { close(r.stop) })
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RunOnce charges every schedule due now; it returns how many installment
// orders it recorded.
func (r *Runner) RunOnce(ctx context.Context) (int, error) {
	return 0, nil
}
