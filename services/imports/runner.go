package imports

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/imports/parse"
	"github.com/almoner/almoner/services/imports/store"
)

// sweepEvery is how often a runner deletes abandoned uploads.
const sweepEvery = time.Minute

// runner runs imports in the background. Every replica runs one; an
// import is leased to one runner at a time (store.Claim, FOR UPDATE SKIP
// LOCKED), which renews the lease while it works. A replica that stops
// leaves its lease to run out; the next runner to claim the import goes
// on after its checkpoint.
type runner struct {
	s      *Service
	owner  string
	logger *slog.Logger

	loop  *service.Loop
	swept time.Time
}

// newRunner returns a runner; owner names it in leases (host/uuid when
// "").
func newRunner(s *Service, owner string) *runner {
	if owner == "" {
		host, _ := os.Hostname()
		owner = host + "/" + uuid.NewString()
	}
	r := &runner{s: s, owner: owner, logger: s.logger}
	r.loop = service.NewLoop(s.cfg.Poll, r.step)
	return r
}

// step sweeps abandoned uploads, then runs imports until none is left to
// claim.
func (r *runner) step(ctx context.Context) {
	r.sweep(ctx)
	for r.claimAndRun(ctx) {
	}
}

// poke wakes the runner at once (an import was just queued here).
func (r *runner) poke() { r.loop.Wake() }

func (r *runner) start() { r.loop.Start() }

// stop ends the runner: the batch in hand is dropped (it was not saved),
// and the lease runs out for another replica or the next start.
func (r *runner) stop(ctx context.Context) error { return r.loop.Stop(ctx) }

// sweep deletes uploads abandoned by processes that died, once a minute.
func (r *runner) sweep(ctx context.Context) {
	if time.Since(r.swept) < sweepEvery {
		return
	}
	r.swept = time.Now()
	if n, err := r.s.store.SweepUploads(ctx); err != nil {
		r.logger.WarnContext(ctx, "imports: sweep abandoned uploads", "error", err)
	} else if n > 0 {
		r.logger.InfoContext(ctx, "imports: deleted abandoned uploads", "count", n)
	}
}

// actor is the audit actor of an import's own work.
func actor(m store.Import) string { return "import:" + m.ID.String() }

// claimAndRun takes one import and runs it; false when there was none to
// take or the runner is stopping.
func (r *runner) claimAndRun(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	m, ok, err := r.s.store.Claim(ctx, r.owner, r.s.cfg.Lease, actor)
	if err != nil {
		r.logger.ErrorContext(ctx, "imports: claim", "error", err)
		return false
	}
	if !ok {
		return false
	}
	// An import resumed after its runner stopped sends the batch in hand
	// again; past the retention of the services' import rows that could
	// write it twice, so such an import fails instead (retention.go).
	if err = r.s.resumable(m, time.Now()); err != nil {
		r.logger.WarnContext(ctx, "imports: import too old to resume; it fails", "import", m.ID, "tenant", m.TenantID,
			"started_at", m.StartedAt, "checkpoint", m.Checkpoint)
	} else {
		err = r.runLeased(ctx, m)
	}
	var fe *parse.FileError
	var refused *refusal
	switch {
	case err == nil, errors.Is(err, store.ErrLeaseLost), ctx.Err() != nil:
	case errors.As(err, &fe), errors.As(err, &refused):
		// The file, or a service's answer about it, will be the same
		// next time: the import fails, saying why.
		if _, ferr := r.s.store.Finish(ctx, m, r.owner, store.Failed, err.Error(), actor(m)); ferr != nil {
			r.logger.ErrorContext(ctx, "imports: fail import", "import", m.ID, "error", ferr)
		}
	default:
		// Anything else (the database away) leaves the import to its
		// lease: it is taken again once the lease runs out.
		r.logger.ErrorContext(ctx, "imports: import stopped; it resumes when its lease runs out", "import", m.ID, "error", err)
	}
	return true
}

// runLeased runs m while a heartbeat renews its lease; losing the lease
// stops the work.
func (r *runner) runLeased(ctx context.Context, m store.Import) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	beat := sync.WaitGroup{}
	beat.Add(1)
	go func() {
		defer beat.Done()
		t := time.NewTicker(r.s.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := r.s.store.Renew(ctx, m, r.owner, r.s.cfg.Lease); errors.Is(err, store.ErrLeaseLost) {
					cancel(err)
					return
				} else if err != nil && ctx.Err() == nil {
					r.logger.WarnContext(ctx, "imports: renew lease", "import", m.ID, "error", err)
				}
			}
		}
	}()
	err := r.run(ctx, m)
	close(stop)
	beat.Wait()
	if cause := context.Cause(ctx); errors.Is(cause, store.ErrLeaseLost) {
		return cause
	}
	return err
}

// run validates m (unless a runner before finished that) and imports it
// from its checkpoint, then marks it succeeded.
func (r *runner) run(ctx context.Context, m store.Import) error {
	if m.Status == store.Validating {
		rows, failed, err := r.validate(ctx, m)
		if err != nil {
			return err
		}
		if m, err = r.s.store.StartImporting(ctx, m, r.owner, rows, failed, actor(m)); err != nil {
			return err
		}
	}
	if err := r.importRows(ctx, m); err != nil {
		return err
	}
	_, err := r.s.store.Finish(ctx, m, r.owner, store.Succeeded, "", actor(m))
	return err
}

// errorFlush is how many row errors validation holds before it records
// them.
const errorFlush = 1000

// validate reads the whole file (pass 1): it counts the rows and records
// the errors of the refused ones. Errors are recorded idempotently, so a
// validation run again after a resume adds nothing.
func (r *runner) validate(ctx context.Context, m store.Import) (rows, failed int64, err error) {
	rd, err := parse.NewReader(m.Kind, m.Format, r.s.store.Open(ctx, m.TenantID, m.ID), m.Currency)
	if err != nil {
		return 0, 0, err
	}
	var pending []store.RowError
	for {
		row, err := rd.Next()
		if errors.Is(err, errEOF) {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		rows++
		if len(row.Errors) > 0 {
			failed++
			pending = appendErrors(pending, row.Errors)
		}
		if len(pending) >= errorFlush {
			if err := r.s.store.AddErrors(ctx, m, pending); err != nil {
				return 0, 0, err
			}
			pending = pending[:0]
		}
	}
	return rows, failed, r.s.store.AddErrors(ctx, m, pending)
}

func appendErrors(dst []store.RowError, errs []parse.RowError) []store.RowError {
	for _, e := range errs {
		dst = append(dst, store.RowError{Row: e.Row, Column: e.Column, Message: e.Message})
	}
	return dst
}

// principal is what an import's calls assert: the import's tenant, with
// the import as the actor.
func principal(ctx context.Context, m store.Import) context.Context {
	return authctx.NewOutgoingContext(ctx, authctx.System(m.TenantID.String(), actor(m), scopes.ImportsManage))
}
