package recurring

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
	"github.com/almoner/almoner/services/orders/wire"
)

// RunnerConfig configures the recurring charge runner.
type RunnerConfig struct {
	// Interval is the time between scans for due schedules.
	Interval time.Duration
	// Housekeep, when set, runs after each pass: the service's pruning of
	// what it keeps for a while only.
	Housekeep func(context.Context)
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
				// A run outlasts at least a minute whatever the interval:
				// one that times out after charging a card but before
				// recording it leaves the charge to the next run.
				ctx, cancel := context.WithTimeout(context.Background(), max(10*r.cfg.Interval, time.Minute))
				if _, err := r.RunOnce(ctx); err != nil {
					r.logger.ErrorContext(ctx, "recurring charge run", "error", err)
				}
				if r.cfg.Housekeep != nil {
					r.cfg.Housekeep(ctx)
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

// RunOnce charges every schedule due at the service clock's today and
// returns how many installment orders it recorded. Several runners may run
// it at once: each schedule is claimed with FOR UPDATE SKIP LOCKED.
//
// Each run is one trace (span "recurring.run") with a child span per
// schedule ("recurring.charge"); the installment order's audit rows carry
// that span, so the webhook deliveries the order causes join the trace.
func (r *Runner) RunOnce(ctx context.Context) (n int, err error) {
	ctx, span := runnerTracer.Start(ctx, "recurring.run", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal))
	defer func() {
		span.SetAttributes(attribute.Int("almoner.recurring.charged", n))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "recurring run failed")
		}
		span.End()
	}()
	s := r.s
	today := store.Day(s.now())
	// Paused schedules whose day has come resume first, so that one due
	// on its resume day is charged in this run.
	if err := r.resume(ctx, today); err != nil {
		return 0, err
	}
	total := 0
	seen := map[uuid.UUID]bool{}
	for {
		due, err := s.store.DueSchedules(ctx, today, 200)
		if err != nil {
			return total, err
		}
		progress := false
		for _, d := range due {
			if seen[d.ID] {
				continue // declined today, or held by another runner
			}
			seen[d.ID] = true
			progress = true
			if r.charge(ctx, d.TenantID, d.ID, today) {
				total++
			}
		}
		if !progress || len(due) == 0 {
			return total, nil
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		default:
		}
	}
}

// resume resumes every paused schedule whose pausedUntil is today or
// earlier, a batch at a time.
func (r *Runner) resume(ctx context.Context, today time.Time) error {
	const batch = 200
	for {
		n, err := r.s.store.ResumeDue(ctx, today, batch)
		if err != nil || n < batch {
			return err
		}
	}
}

// charge charges one due schedule in its own span and reports whether an
// installment order was recorded.
func (r *Runner) charge(ctx context.Context, tenantID, scheduleID uuid.UUID, today time.Time) bool {
	s := r.s
	ctx, span := runnerTracer.Start(ctx, "recurring.charge", trace.WithAttributes(
		attribute.String("almoner.tenant_id", tenantID.String()),
		attribute.String("almoner.schedule_id", scheduleID.String())))
	defer span.End()
	ok, err := s.chargeDue(ctx, span, tenantID, scheduleID, today)
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, "charge failed")
		r.logger.ErrorContext(ctx, "charge recurring installment", "schedule_id", scheduleID, "error", err)
		return false
	case ok:
		span.SetAttributes(attribute.String("almoner.recurring.result", "charged"))
		runnerCharges.WithLabelValues("charged").Inc()
	default:
		// Declined (the installment counted it) or nothing due any more.
		span.SetAttributes(attribute.String("almoner.recurring.result", "not_charged"))
	}
	return ok
}

// chargeDue charges a due schedule's next period in three steps, with no
// transaction open while the processor is called: claim the period
// (committed, with a lease), build and charge the installment, record
// the outcome. A charge whose outcome is unknown leaves its claim, its
// lease ended, for the next pass to try with the same key; one whose
// runner died is taken over when its lease ends.
func (s *Service) chargeDue(ctx context.Context, span trace.Span, tenantID, scheduleID uuid.UUID, today time.Time) (bool, error) {
	c, ok, err := s.store.ClaimInstallment(ctx, tenantID, scheduleID, today, s.lease)
	if err != nil || !ok {
		return false, err
	}
	span.SetAttributes(attribute.String("almoner.recurring.period", c.Period.Format(time.DateOnly)), attribute.Int("almoner.recurring.attempt", int(c.Attempt)))
	out, err := s.installment(ctx, c.Schedule, c.Period, c.Attempt)
	if err != nil {
		if xerr := s.store.ExpireInstallmentClaim(context.WithoutCancel(ctx), c); xerr != nil {
			s.logger.ErrorContext(ctx, "expire installment claim", "schedule_id", scheduleID, "error", xerr)
		}
		return false, err
	}
	if out.Declined || out.PastDue {
		s.syncRetryDays(ctx, tenantID)
	}
	return s.store.RecordInstallment(ctx, c, today, out)
}

// DefaultChargeLease is how long a runner holds a claimed installment
// while it charges it: far longer than a processor call may take
// (stripeproc's timeout and retries), so only a dead runner loses it.
const DefaultChargeLease = 5 * time.Minute

// runnerTracer names the runner's spans; it follows the global provider
// that pkg/telemetry installs.
var runnerTracer = otel.Tracer("github.com/almoner/almoner/services/orders/runner")

// installment builds the order for one period of a schedule: one donation
// line to the schedule's fund, paid by the schedule's method. Processor
// payments are charged off-session with the schedule's saved method, with
// the key schedule/period/attempt: a runner that dies after charging
// charges nothing new when the period is tried again (same attempt, same
// key), while the retry of a decline is a new charge.
func (s *Service) installment(ctx context.Context, sc store.Schedule, period time.Time, attempt int32) (recurringstore.Outcome, error) {
	funds, err := s.store.GetFunds(ctx, sc.TenantID, []uuid.UUID{sc.FundID})
	if err != nil {
		return recurringstore.Outcome{}, err
	}
	f := funds[sc.FundID]
	orderID := installmentOrderID(sc.ID, period, attempt)
	pay := store.Payment{ID: store.PaymentID(orderID, 0), Method: sc.PaymentMethod, AmountMinor: sc.AmountMinor, Status: store.PaymentAuthorized}
	status := store.StatusCompleted
	if store.ViaProcessor(sc.PaymentMethod) {
		out, err := s.chargeInstallment(ctx, sc, period, attempt, orderID, &pay)
		if err != nil || out.Declined || out.PastDue {
			return out, err
		}
		if pay.Status != store.PaymentCaptured {
			status = store.StatusPending
		}
	}
	// Cash, check and external installments are pledged, not collected by
	// us: recorded as Authorized until the tenant records receipt.
	schedID := sc.ID
	o := store.Order{TenantID: sc.TenantID, ID: orderID, ContactID: sc.ContactID, Status: status, Currency: sc.Currency,
		DonationSubtotalMinor: sc.AmountMinor, TotalMinor: sc.AmountMinor, ScheduleID: &schedID,
		Donations: []store.Donation{{ID: uuid.Must(uuid.NewV7()), FundID: sc.FundID, FundName: f.Name, AmountMinor: sc.AmountMinor,
			IsTaxDeductible: f.IsTaxDeductible, CampaignID: sc.CampaignID}},
		Items: []store.Item{}, Payments: []store.Payment{pay},
		Notes: fmt.Sprintf("Installment of %s (attempt %d).", period.Format(time.DateOnly), attempt)}
	if f.IsTaxDeductible {
		o.DeductibleMinor = sc.AmountMinor
	}
	return recurringstore.Outcome{Order: &store.NewOrder{Order: o, Now: s.now()}}, nil
}

// installmentOrderID is the order id of one attempt at one period of a
// schedule, derived from them as the idempotency key is: a run that tries
// the attempt again after Stripe charged but its answer was lost (or the
// runner died) sends the same request, metadata included, and Stripe
// replays the charge instead of refusing a key reused with other
// parameters, which left the donor charged with no order.
func installmentOrderID(schedule uuid.UUID, period time.Time, attempt int32) uuid.UUID {
	return uuid.NewSHA1(schedule, []byte(fmt.Sprintf("installment/%s/%d", period.Format(time.DateOnly), attempt)))
}

// chargeInstallment charges a schedule's card or bank account without the
// donor present and fills pay. A decline is retried on later days; a
// charge that needs the donor to authenticate cannot succeed off-session,
// so the schedule is past_due at once. An unreachable processor is an
// error: the period is tried again on the next run, with the same key.
func (s *Service) chargeInstallment(ctx context.Context, sc store.Schedule, period time.Time, attempt int32, orderID uuid.UUID, pay *store.Payment) (recurringstore.Outcome, error) {
	method, known, err := s.scheduleMethod(ctx, sc)
	if err != nil {
		return recurringstore.Outcome{}, err
	}
	if known && method.ContactID != sc.ContactID {
		runnerCharges.WithLabelValues("declined").Inc()
		return recurringstore.Outcome{PastDue: true, Reason: ReasonMethodOfAnotherContact}, nil
	}
	tp, ok, err := s.processors.ForTenant(ctx, sc.TenantID.String())
	if err != nil {
		return recurringstore.Outcome{}, err
	}
	if !ok {
		runnerCharges.WithLabelValues("declined").Inc()
		return recurringstore.Outcome{Declined: true, Reason: "processor_not_configured"}, nil
	}
	res, err := tp.Charge(ctx, installmentCharge(sc, method, tp, period, attempt, orderID, pay.ID))
	if err != nil {
		if r, ok := processor.AsRefused(err); ok {
			// The method is gone or unusable: no retry can help.
			runnerCharges.WithLabelValues("declined").Inc()
			return recurringstore.Outcome{PastDue: true, Reason: wire.FirstNonEmpty(r.Code, "payment_method_refused")}, nil
		}
		return recurringstore.Outcome{}, err
	}
	pay.Processor, pay.ProcessorReference = tp.Name, res.Reference
	return s.chargeOutcome(ctx, tp, sc, res, pay), nil
}

// installmentCharge is the off-session charge of one attempt at a period,
// keyed by schedule, period and attempt, with the customer of the
// schedule's method when it is saved at tp's processor for the
// schedule's contact.
func installmentCharge(sc store.Schedule, method store.KnownMethod, tp tenantproc.Account, period time.Time, attempt int32,
	orderID, paymentID uuid.UUID) processor.ChargeRequest {
	req := processor.ChargeRequest{
		IdempotencyKey:  fmt.Sprintf("%s/%s/%d", sc.ID, period.Format(time.DateOnly), attempt),
		AmountMinor:     sc.AmountMinor,
		Currency:        sc.Currency,
		PaymentMethodID: sc.PaymentToken,
		OffSession:      true,
		Description:     fmt.Sprintf("Recurring gift of %s", period.Format(time.DateOnly)),
		Metadata: map[string]string{"tenant_id": sc.TenantID.String(), "order_id": orderID.String(), "payment_id": paymentID.String(),
			"schedule_id": sc.ID.String(), "period": period.Format(time.DateOnly)},
	}
	if sc.PaymentMethod == "Ach" {
		req.PaymentMethodType = "us_bank_account"
	}
	if method.SavedFor(tp.Name, sc.ContactID) {
		req.CustomerID = method.CustomerID
	}
	return req
}

// chargeOutcome reads the processor's answer to an installment's charge
// into pay's status, or a decline: one that needs the donor to
// authenticate cannot succeed off-session (past_due at once, the charge
// cancelled), any other is retried on the tenant's retry days.
func (s *Service) chargeOutcome(ctx context.Context, tp tenantproc.Account, sc store.Schedule, res processor.ChargeResult, pay *store.Payment) recurringstore.Outcome {
	switch {
	case res.Outcome == processor.Succeeded:
		pay.Status = store.PaymentCaptured
	case res.Outcome == processor.Processing:
		pay.Status = store.PaymentPending
	case res.Outcome == processor.RequiresAction || res.DeclineCode == "authentication_required":
		if res.Outcome == processor.RequiresAction {
			if _, err := tenantproc.GiveBack(ctx, tp, res.Reference, res.Outcome, sc.AmountMinor); err != nil {
				s.logger.ErrorContext(ctx, "cancel an installment charge that needs the donor", "processor_reference", res.Reference, "error", err)
			}
		}
		runnerCharges.WithLabelValues("declined").Inc()
		return recurringstore.Outcome{PastDue: true, Reason: "authentication_required"}
	default:
		runnerCharges.WithLabelValues("declined").Inc()
		return recurringstore.Outcome{Declined: true, Reason: wire.FirstNonEmpty(res.DeclineCode, "declined")}
	}
	return recurringstore.Outcome{}
}

// ReasonMethodOfAnotherContact is the failure reason of a schedule whose
// method is saved for another contact: one made before orders refused
// that (checkMethodOwners). It is never charged.
const ReasonMethodOfAnotherContact = "payment_method_of_another_contact"

// scheduleMethod reads the schedule's method in one round trip, detached
// or not (a detached method still names whose card it was); the zero
// KnownMethod and false when the tenant never saved it. The charge checks
// its owner and takes its customer from it.
func (s *Service) scheduleMethod(ctx context.Context, sc store.Schedule) (store.KnownMethod, bool, error) {
	known, err := s.store.KnownMethods(ctx, sc.TenantID, []string{sc.PaymentToken})
	if err != nil {
		return store.KnownMethod{}, false, err
	}
	m, ok := known[sc.PaymentToken]
	return m, ok, nil
}

// runnerCharges counts the runner's installments by result: charged (an
// installment order was recorded) or declined (the processor refused; the
// schedule retries, then turns past_due).
var runnerCharges = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "almoner_recurring_charges_total",
	Help: "Recurring installments attempted by the charge runner, by result.",
}, []string{"result"})

func init() { telemetry.Register(runnerCharges) }
