package reports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/google/uuid"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/wirejson"
	"github.com/almoner/almoner/services/reports/store"
)

// Runner defaults: how often an idle replica looks for a run, how long a
// lease lasts without renewal (a batch renews it), and how many donors a
// batch makes before it saves them and the cursor.
const (
	defaultTaxRunPoll  = time.Second
	defaultTaxRunLease = 30 * time.Second
	defaultTaxRunBatch = 100
)

// taxRunner makes year-end runs in the background. Every replica runs one;
// a run is leased to one replica at a time (store.ClaimTaxRun, FOR UPDATE
// SKIP LOCKED), which renews the lease with each batch. A replica that
// stops leaves its lease to run out; the next replica to claim the run
// goes on after its cursor.
type taxRunner struct {
	s      *Service
	owner  string
	poll   time.Duration
	lease  time.Duration
	batch  int
	logger *slog.Logger

	loop *service.Loop
}

func newTaxRunner(s *Service) *taxRunner {
	host, _ := os.Hostname()
	r := &taxRunner{s: s, owner: host + "/" + uuid.NewString(), poll: s.cfg.TaxRunPoll, lease: s.cfg.TaxRunLease, batch: s.cfg.TaxRunBatch,
		logger: s.logger}
	if r.poll <= 0 {
		r.poll = defaultTaxRunPoll
	}
	if r.lease <= 0 {
		r.lease = defaultTaxRunLease
	}
	if r.batch <= 0 {
		r.batch = defaultTaxRunBatch
	}
	r.loop = service.NewLoop(r.poll, func(ctx context.Context) {
		for r.claimAndRun(ctx) {
		}
	})
	return r
}

// poke wakes the runner at once (a run was just queued here).
func (r *taxRunner) poke() { r.loop.Wake() }

func (r *taxRunner) start() { r.loop.Start() }

// stop ends the runner: the batch in hand is dropped (it was not saved),
// and the lease runs out for another replica or the next start.
func (r *taxRunner) stop(ctx context.Context) error { return r.loop.Stop(ctx) }

// claimAndRun takes one run and makes it; false when there was none to
// take or the runner is stopping.
func (r *taxRunner) claimAndRun(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	run, ok, err := r.s.store.ClaimTaxRun(ctx, r.owner, r.lease)
	if err != nil {
		r.logger.ErrorContext(ctx, "tax statement runs: claim", "error", err)
		return false
	}
	if !ok {
		return false
	}
	err = r.make(ctx, run)
	var ae *apperr.Error
	switch {
	case err == nil, errors.Is(err, store.ErrLeaseLost), ctx.Err() != nil:
	case errors.As(err, &ae):
		// A refusal (the profile lost a required field) will not go away
		// by trying again: the run fails, saying why.
		if ferr := r.s.store.FinishTaxRun(ctx, run, r.owner, "failed", ae.Error()); ferr != nil {
			r.logger.ErrorContext(ctx, "tax statement runs: fail run", "run", run.ID, "error", ferr)
		}
	default:
		// Anything else (the database away) leaves the run to its lease:
		// it is taken again once the lease runs out.
		r.logger.ErrorContext(ctx, "tax statement runs: run stopped; it resumes when its lease runs out", "run", run.ID, "error", err)
	}
	return true
}

// make makes the run's statements from its cursor on, a batch at a time,
// then marks it succeeded. The donors after the cursor are listed once
// (one aggregate of the year's orders), then made in batches.
func (r *taxRunner) make(ctx context.Context, run store.TaxRun) error {
	prof, err := r.s.profile(ctx, run.TenantID)
	if err != nil {
		return err
	}
	if err := missingProfileFields(prof); err != nil {
		return err
	}
	currencies, err := r.s.store.TaxRunCurrencies(ctx, run)
	if err != nil {
		return err
	}
	m := minima(run.Minimum, currencies)
	donors, err := r.s.store.TaxRunDonors(ctx, run, m, run.Cursor, math.MaxInt32)
	if err != nil {
		return err
	}
	var total *int
	if run.Total == nil {
		n := len(donors)
		if run.Cursor > 0 {
			// A run resumed before its total was saved (never: the first
			// batch saves it); counted from scratch all the same.
			if n, err = r.s.store.CountTaxRunDonors(ctx, run, m); err != nil {
				return err
			}
		}
		total = &n
	}
	for len(donors) > 0 {
		chunk := donors[:min(r.batch, len(donors))]
		donors = donors[len(chunk):]
		items, err := r.statements(ctx, run, prof, chunk)
		if err != nil {
			return err
		}
		if err := r.s.store.SaveTaxRunBatch(ctx, run, r.owner, items, total, r.lease); err != nil {
			return err
		}
		run.Cursor, total = chunk[len(chunk)-1], nil
	}
	if total != nil { // a run with no donor at all still records its total
		if err := r.s.store.SaveTaxRunBatch(ctx, run, r.owner, nil, total, r.lease); err != nil {
			return err
		}
	}
	return r.s.store.FinishTaxRun(ctx, run, r.owner, "succeeded", "")
}

// statements makes one batch's statements: the donors, their orders and
// the issue records of the whole batch are read and written together.
func (r *taxRunner) statements(ctx context.Context, run store.TaxRun, prof store.Profile, contacts []int64) ([]store.TaxRunItem, error) {
	donors, err := r.s.store.Donors(ctx, run.TenantID, contacts)
	if err != nil {
		return nil, err
	}
	orders, err := r.s.store.ContactsOrders(ctx, run.TenantID, contacts, run.PeriodStart, run.PeriodEnd)
	if err != nil {
		return nil, err
	}
	loc := location(prof)
	type lines struct {
		gifts  []*reportsv1.StatementGift
		totals []*reportsv1.StatementTotal
	}
	made := make([]lines, len(contacts))
	docs := make([]store.Issue, len(contacts))
	for i, c := range contacts {
		made[i].gifts, made[i].totals = statementLines(orders[c], loc)
		docs[i] = store.Issue{Subject: statementSubject(c, run.Year), Hash: statementHash(made[i].gifts)}
	}
	issued, err := r.s.store.IssueMany(ctx, run.TenantID, store.KindStatement, docs, authctx.SystemActor)
	if err != nil {
		return nil, err
	}
	items := make([]store.TaxRunItem, 0, len(contacts))
	for i, c := range contacts {
		st := buildStatement(run.Year, issued[i], prof, donors[c], made[i].gifts, made[i].totals)
		b, err := wirejson.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("encode statement of contact %d: %w", c, err)
		}
		items = append(items, store.TaxRunItem{ContactID: c, StatementNumber: st.GetStatementNumber(), Statement: b})
	}
	return items, nil
}
