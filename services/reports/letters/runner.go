package letters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/reports/templates"
)

// Runner settings' defaults: how often an idle replica looks for a run,
// how long a lease lasts without renewal (each batch renews it), and how
// many gifts a batch makes before it saves them and the cursor.
const (
	DefaultPoll  = time.Second
	DefaultLease = 30 * time.Second
	DefaultBatch = 100
)

// Runner makes letter runs in the background. Every replica runs one; a
// run is leased to one replica at a time (Store.Claim, FOR UPDATE SKIP
// LOCKED). A replica that stops leaves its lease to run out, and the next
// to claim the run goes on after its cursor.
type Runner struct {
	store     *Store
	templates *templates.Store
	frames    Frames
	claimer   Claimer
	owner     string
	lease     time.Duration
	batch     int
	now       func() time.Time
	logger    *slog.Logger
	loop      *service.Loop
}

// RunnerConfig tunes a Runner; zero fields take the defaults.
type RunnerConfig struct {
	Poll, Lease time.Duration
	Batch       int
	Now         func() time.Time
}

// NewRunner returns a runner of st's runs.
func NewRunner(st *Store, ts *templates.Store, frames Frames, claimer Claimer, cfg RunnerConfig, logger *slog.Logger) *Runner {
	host, _ := os.Hostname()
	r := &Runner{store: st, templates: ts, frames: frames, claimer: claimer, owner: host + "/" + uuid.NewString(), lease: cfg.Lease,
		batch: cfg.Batch, now: cfg.Now, logger: logger}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if r.lease <= 0 {
		r.lease = DefaultLease
	}
	if r.batch <= 0 {
		r.batch = DefaultBatch
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.loop = service.NewLoop(cfg.Poll, func(ctx context.Context) {
		for r.claimAndRun(ctx) {
		}
	})
	return r
}

// Start starts the runner.
func (r *Runner) Start() { r.loop.Start() }

// Stop ends the runner: the batch in hand is dropped (not saved), and
// its lease runs out for another replica.
func (r *Runner) Stop(ctx context.Context) error { return r.loop.Stop(ctx) }

// Poke wakes the runner (a run was just queued here).
func (r *Runner) Poke() { r.loop.Wake() }

// claimAndRun takes one run and makes it; false when there was none.
func (r *Runner) claimAndRun(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	run, ok, err := r.store.Claim(ctx, r.owner, r.lease)
	if err != nil {
		r.logger.ErrorContext(ctx, "letter runs: claim", "error", err)
		return false
	}
	if !ok {
		return false
	}
	err = r.make(ctx, run)
	var fatal failure
	switch {
	case err == nil, errors.Is(err, ErrLeaseLost), ctx.Err() != nil:
	case errors.As(err, &fatal):
		if ferr := r.store.Finish(ctx, run, r.owner, "failed", fatal.reason); ferr != nil {
			r.logger.ErrorContext(ctx, "letter runs: fail run", "run", run.ID, "error", ferr)
		}
	default:
		// The database or the orders service away: the run waits for its
		// lease to run out and is taken again from its cursor.
		r.logger.ErrorContext(ctx, "letter runs: run stopped; it resumes when its lease runs out", "run", run.ID, "error", err)
	}
	return true
}

// failure ends a run as failed: what will not go away by trying again.
type failure struct{ reason string }

func (f failure) Error() string { return f.reason }

// make makes the run's letters from its cursor on, a batch at a time,
// then marks it succeeded.
func (r *Runner) make(ctx context.Context, run Run) error {
	j, err := r.job(ctx, run)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		gifts, err := r.store.Gifts(ctx, j.run, r.batch)
		if err != nil {
			return err
		}
		if len(gifts) == 0 {
			return r.store.Finish(ctx, run, r.owner, "succeeded", "")
		}
		b, err := j.batch(ctx, gifts)
		if err != nil {
			return err
		}
		if err := r.store.SaveBatch(ctx, j.run, r.owner, b, r.lease); err != nil {
			return err
		}
		j.run.CursorAt, j.run.CursorID = &b.CursorAt, &b.CursorID
	}
	return ctx.Err()
}

// job reads what every letter of the run shares: its template and frame.
func (r *Runner) job(ctx context.Context, run Run) (*job, error) {
	tmpl, err := r.templates.Get(ctx, run.TenantID, run.TemplateID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, failure{"The run's template no longer exists."}
	}
	if err != nil {
		return nil, fmt.Errorf("letter run %s: template: %w", run.ID, err)
	}
	base, err := r.frames.LetterBase(ctx, run.TenantID)
	if err != nil {
		return nil, err
	}
	today := r.now().In(base.Location).Format(time.DateOnly)
	return &job{run: run, tmpl: tmpl, base: base, today: today, frames: r.frames, claimer: r.claimer}, nil
}

// RunAll makes every unfinished run this runner can claim, in the
// calling goroutine (benchmarks and tests that drive the runner).
func (r *Runner) RunAll(ctx context.Context) error {
	for r.claimAndRun(ctx) {
	}
	return ctx.Err()
}
