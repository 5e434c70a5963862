package webhooks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/services/webhooks/store"
)

// Dispatcher turns audit events into deliveries and sends them. On each
// tick it (1) reads, per live endpoint, up to EnqueueLimit new matching
// events with the audit reader that never skips a late commit, and queues
// them; (2) claims up to SendLimit due deliveries (fewer while earlier
// sends are still in flight) and sends them in parallel on a pool of
// SendLimit sender goroutines. Results are recorded in batches by one
// recorder goroutine.
type Dispatcher struct {
	s *Service

	cancel   context.CancelFunc
	loopDone chan struct{}

	sem      chan struct{} // one token per send in flight
	inflight sync.WaitGroup
	work     chan store.Claimed // claimed deliveries, to the senders
	senders  sync.WaitGroup
	results  chan store.Outcome
	recDone  chan struct{}

	lastCount   time.Time
	lastDisable time.Time
	lastPrune   time.Time
}

func newDispatcher(s *Service) *Dispatcher {
	return &Dispatcher{
		s:       s,
		sem:     make(chan struct{}, s.cfg.SendLimit),
		work:    make(chan store.Claimed, s.cfg.SendLimit),
		results: make(chan store.Outcome, s.cfg.SendLimit),
	}
}

func (d *Dispatcher) start() {
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.loopDone = make(chan struct{})
	d.startWorkers()
	// Enqueueing and sending are two loops on the same tick, each doing at
	// most its limit per tick. Run one after the other, a commit waited
	// for both steps before its first attempt (BenchmarkDispatcher: a
	// large enqueue page held up the claims behind it); side by side,
	// each only waits for its own.
	var loops sync.WaitGroup
	for _, step := range []func(context.Context){d.enqueue, d.dispatchAndCount} {
		loops.Add(1)
		go func() {
			defer loops.Done()
			t := time.NewTicker(d.s.cfg.Tick)
			defer t.Stop()
			for {
				step(ctx)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	go func() {
		loops.Wait()
		close(d.loopDone)
	}()
}

// startWorkers starts the senders and the recorder. It is apart from
// start so tests can drive ticks themselves and still send and record.
//
// The senders are long-lived, one per send slot, rather than a goroutine
// per send: a new goroutine grew its stack through TLS and HTTP/2 on every
// attempt (7 % of the CPU of BenchmarkDispatcher in copystack alone).
func (d *Dispatcher) startWorkers() {
	d.recDone = make(chan struct{})
	go d.record()
	for range cap(d.sem) {
		d.senders.Add(1)
		go func() {
			defer d.senders.Done()
			// Sends outlive a stop request: a stopping dispatcher
			// finishes and records what it has claimed.
			ctx := context.Background()
			for c := range d.work {
				out := d.attempt(ctx, c)
				<-d.sem
				d.results <- out
				d.inflight.Done()
			}
		}()
	}
}

// stopWorkers ends the senders and then the recorder, once every send in
// flight is done; the caller has stopped dispatching.
func (d *Dispatcher) stopWorkers() {
	close(d.work)
	d.senders.Wait()
	close(d.results)
	<-d.recDone
}

// stop ends the tick loop, lets the sends in flight finish (each is bounded
// by the attempt timeout) and records their results before returning.
func (d *Dispatcher) stop(ctx context.Context) error {
	if d.cancel == nil {
		return nil
	}
	d.cancel()
	<-d.loopDone
	sent := make(chan struct{})
	go func() { d.inflight.Wait(); close(sent) }()
	select {
	case <-sent:
	case <-ctx.Done():
		// Unrecorded sends are retried once their lease runs out.
		return ctx.Err()
	}
	done := make(chan struct{})
	go func() { d.stopWorkers(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tick is one tick of both loops, one after the other: what the
// dispatcher does in a tick, for tests that drive ticks themselves.
func (d *Dispatcher) tick(ctx context.Context) {
	d.enqueue(ctx)
	d.dispatchAndCount(ctx)
}

// dispatchAndCount is the sending loop's step: dispatch, and now and then
// count what is pending for the gauge (a count is too costly for every
// tick of a fast-ticking dispatcher) and switch off endpoints that have
// failed for autoDisableAfter.
func (d *Dispatcher) dispatchAndCount(ctx context.Context) {
	d.dispatch(ctx)
	if every := min(time.Minute, 100*d.s.cfg.Tick); time.Since(d.lastDisable) > every {
		d.lastDisable = time.Now()
		d.disableFailing(ctx)
	}
	if r := d.s.cfg.DeliveryRetention; r > 0 && time.Since(d.lastPrune) > pruneEvery {
		d.lastPrune = time.Now()
		d.prune(ctx, r)
	}
	if time.Since(d.lastCount) > 5*time.Second {
		d.lastCount = time.Now()
		if n, err := d.s.store.PendingCount(ctx); err == nil {
			metricPending.Set(float64(n))
		}
	}
}

// pruneEvery is how often a dispatcher deletes the deliveries past their
// retention: hourly, the first time at its first tick.
const pruneEvery = time.Hour

// prune deletes the finished deliveries queued more than retention ago
// (by the service's clock), their attempts and old test attempts.
func (d *Dispatcher) prune(ctx context.Context, retention time.Duration) {
	p, err := d.s.store.PruneDeliveries(ctx, d.s.now().Add(-retention))
	metricPruned.WithLabelValues("deliveries").Add(float64(p.Deliveries))
	metricPruned.WithLabelValues("attempts").Add(float64(p.Attempts))
	metricPruned.WithLabelValues("test_attempts").Add(float64(p.TestAttempts))
	metricPruned.WithLabelValues("orphans").Add(float64(p.Orphans))
	if err != nil && ctx.Err() == nil {
		d.s.logger.ErrorContext(ctx, "webhooks: prune deliveries", "error", err.Error())
	}
	if p.Deliveries+p.TestAttempts+p.Orphans > 0 {
		d.s.logger.InfoContext(ctx, "webhooks: pruned deliveries past their retention", "deliveries", p.Deliveries,
			"attempts", p.Attempts, "test_attempts", p.TestAttempts, "pending_of_deleted_endpoints", p.Orphans)
	}
}

// autoDisableAfter is how long every delivery attempt of an endpoint must
// have failed before the dispatcher switches it off.
const autoDisableAfter = 5 * 24 * time.Hour

// disableFailing switches off each live endpoint whose delivery attempts
// have all failed since autoDisableAfter ago (by the service's clock,
// which tests move), with its reason and a webhook_endpoint.updated event.
func (d *Dispatcher) disableFailing(ctx context.Context) {
	now := d.s.now()
	cutoff := now.Add(-autoDisableAfter)
	failing, err := d.s.store.FailingEndpoints(ctx, cutoff)
	if err != nil {
		if ctx.Err() == nil {
			d.s.logger.ErrorContext(ctx, "webhooks: find failing endpoints", "error", err.Error())
		}
		return
	}
	for _, f := range failing {
		reason := fmt.Sprintf("Switched off on %s: every delivery attempt has failed since %s (5 days or more). Fix the receiver, then PUT the endpoint with active: true; delivery resumes where it stopped.",
			now.UTC().Format(time.RFC3339), f.FirstFailure.UTC().Format(time.RFC3339))
		off, err := d.s.store.DisableFailing(ctx, f, cutoff, reason)
		if err != nil {
			d.s.logger.ErrorContext(ctx, "webhooks: disable failing endpoint", "endpoint_id", f.ID.String(), "error", err.Error())
			continue
		}
		if off {
			d.s.logger.WarnContext(ctx, "webhooks: endpoint switched off after 5 days of failures", "tenant_id", f.TenantID.String(), "endpoint_id", f.ID.String())
		}
	}
}

// enqueueChunk bounds one commit of the enqueue step. A tick may queue up
// to EnqueueLimit events of an endpoint, but in commits of at most this
// many, so the sending loop starts on the first while the rest are read:
// as one 10,000-event page, the first send of a backlog waited seconds for
// the whole page to be read, encoded and written (BenchmarkDispatcher).
const enqueueChunk = 1000

// enqueue queues each live endpoint's new matching events. A tenant
// without webhooks:enabled has its endpoints' cursors moved over its
// events without queueing them: no events fire for it, and when the flag
// is turned on only events from then on are delivered.
func (d *Dispatcher) enqueue(ctx context.Context) {
	eps, err := d.s.store.LiveEndpoints(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.s.logger.ErrorContext(ctx, "webhooks: list endpoints", "error", err.Error())
		}
		return
	}
	for _, ep := range eps {
		if ctx.Err() != nil {
			return
		}
		for left := d.s.cfg.EnqueueLimit; left > 0; {
			n, more := d.enqueueChunk(ctx, &ep, min(left, enqueueChunk))
			if !more {
				break
			}
			left -= n
		}
	}
}

// enqueueChunk reads up to limit of the endpoint's new events and queues
// them (or, with the flag off, passes over them), moving ep.Cursor on. It
// returns how many events it read and whether the endpoint may have more.
//
// The flag is checked after the events are read, never before: the answer
// is then at least as new as every event of the page (see featureCache),
// so an event committed after webhooks:enabled was turned off is passed
// over, not queued on an answer from before the switch.
func (d *Dispatcher) enqueueChunk(ctx context.Context, ep *store.LiveEndpoint, limit int) (int, bool) {
	page, err := audit.Read(ctx, d.s.store.Pool(), audit.ReadQuery{
		After: ep.Cursor, TenantID: ep.TenantID.String(), Events: ep.EventTypes, Limit: limit,
	})
	if err != nil {
		if ctx.Err() == nil {
			d.s.logger.ErrorContext(ctx, "webhooks: read audit log", "error", err.Error())
		}
		return 0, false
	}
	if page.Next == ep.Cursor {
		return 0, false
	}
	f, err := d.s.features.firing(ctx, ep.TenantID.String())
	if err != nil {
		if ctx.Err() == nil {
			d.s.logger.WarnContext(ctx, "webhooks: tenant features unknown; endpoint skipped this tick", "tenant_id", ep.TenantID.String(), "error", err.Error())
		}
		return 0, false
	}
	ds, err := d.deliveries(page.Events, f)
	if err != nil {
		d.s.logger.ErrorContext(ctx, "webhooks: encode event", "endpoint_id", ep.ID.String(), "error", err.Error())
		return 0, false // do not move the cursor past an event not queued
	}
	moved, err := d.s.store.Enqueue(ctx, *ep, ep.Cursor, page.Next, ds)
	if err != nil {
		if ctx.Err() == nil {
			d.s.logger.ErrorContext(ctx, "webhooks: enqueue", "endpoint_id", ep.ID.String(), "error", err.Error())
		}
		return 0, false
	}
	if !moved {
		return 0, false // another dispatcher has the endpoint
	}
	ep.Cursor = page.Next
	// A short page read everything below the audit horizon.
	return len(page.Events), len(page.Events) == limit
}

// deliveries makes the deliveries of a page of events: none when the
// tenant's events do not fire, and none of an event that occurred before
// the tenant last began to fire (it was committed while they did not).
func (d *Dispatcher) deliveries(events []audit.Event, f Firing) ([]store.NewDelivery, error) {
	if !f.On {
		return nil, nil
	}
	ds := make([]store.NewDelivery, 0, len(events))
	for _, e := range events {
		if e.OccurredAt.Before(f.Since) {
			continue
		}
		body, err := buildBody(e)
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", e.EventID, err)
		}
		ds = append(ds, store.NewDelivery{EventID: uuid.MustParse(e.EventID), Event: e.Event, Body: body, OccurredAt: e.OccurredAt, TraceParent: e.TraceParent})
	}
	return ds, nil
}

// dispatch claims due deliveries for the free send slots and sends them.
func (d *Dispatcher) dispatch(ctx context.Context) {
	free := cap(d.sem) - len(d.sem)
	if free <= 0 {
		return
	}
	asked := time.Now()
	claimed, err := d.s.store.Claim(ctx, free, d.s.cfg.Lease)
	if err != nil {
		if ctx.Err() == nil {
			d.s.logger.ErrorContext(ctx, "webhooks: claim deliveries", "error", err.Error())
		}
		return
	}
	for _, c := range claimed {
		c.Asked = asked
		// Neither blocks: at most `free` were claimed, and work holds as
		// many deliveries as there are tokens.
		d.sem <- struct{}{}
		d.inflight.Add(1)
		d.work <- c
	}
}

// tracer makes the dispatcher's spans, from the global provider that
// pkg/telemetry installs.
var tracer = otel.Tracer("github.com/almoner/almoner/services/webhooks")

// attempt sends one claimed delivery and decides what follows.
//
// Each attempt is one "webhook.deliver" span whose parent is the span of
// the request that wrote the event's audit row, so that request's trace
// shows its deliveries (and a sampled-out request's deliveries are not
// sampled either). The span stays in the process: the POST carries no
// traceparent, since the receiver is outside and internal ids stay inside.
func (d *Dispatcher) attempt(ctx context.Context, c store.Claimed) store.Outcome {
	if c.Attempt == 1 {
		metricLag.Observe(time.Since(c.OccurredAt).Seconds())
	}
	if sc, ok := audit.SpanContext(c.TraceParent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, span := tracer.Start(ctx, "webhook.deliver", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("webhook.event", c.Event),
			attribute.String("webhook.endpoint_id", c.EndpointID.String()),
			attribute.Int("webhook.attempt", c.Attempt),
		))
	defer span.End()
	var r result
	if secret, ok := d.s.openSecret(c.TenantID, c.EndpointID, c.SecretBox); ok {
		r = d.s.sender.send(ctx, c.URL, secret, c.Event, c.Body)
	} else {
		r = unsealFailed()
	}
	metricAttempts.Inc()
	out := store.Outcome{Attempt: store.Attempt{
		TenantID: c.TenantID, ID: r.deliveryID, EndpointID: c.EndpointID, DeliveryID: c.ID, EventID: c.EventID,
		Event: c.Event, Attempt: c.Attempt, AttemptedAt: r.started, Success: r.success(), StatusCode: r.status,
		Duration: r.duration, Error: r.err,
	}}
	span.SetAttributes(attribute.Bool("webhook.success", out.Attempt.Success))
	if r.status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
	}
	if !out.Attempt.Success {
		// The sanitized reason only, as in the delivery record.
		span.SetStatus(codes.Error, r.err)
	}
	switch {
	case out.Attempt.Success:
		out.State = "succeeded"
	case c.Attempt >= d.s.cfg.MaxAttempts:
		metricFailures.Inc()
		metricAbandoned.Inc()
		out.State, out.Attempt.Abandoned = "abandoned", true
	default:
		metricFailures.Inc()
		out.State = "pending"
		out.NextAttemptAt = nextAttempt(c, r.started, retryDelay(d.s.cfg.RetryBase, c.Attempt))
	}
	return out
}

// nextAttempt is when a failed attempt's delivery is due again: wait
// after the moment the attempt began, in the database's clock (every
// dispatcher compares next_attempt_at with the database's now()). That
// moment is the claim's database time plus how long after the claim was
// asked the attempt began, by this process's monotonic clock: on a loaded
// machine an attempt can begin a good part of a second after its claim,
// and a retry timed from the claim came that much early.
func nextAttempt(c store.Claimed, began time.Time, wait time.Duration) time.Time {
	var late time.Duration
	if !c.Asked.IsZero() {
		late = max(began.Sub(c.Asked), 0)
	}
	return c.ClaimedAt.Add(late + wait)
}

// retryDelay is the wait after failed attempt n: base·2^(n-1).
func retryDelay(base time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 30 {
		n = 30
	}
	return base << (n - 1)
}

// record writes outcomes in batches: whatever has arrived, up to 1000,
// in one transaction. A batch that fails to write is logged; its
// deliveries come due again when their lease runs out (at least once).
func (d *Dispatcher) record() {
	defer close(d.recDone)
	for first := range d.results {
		batch := []store.Outcome{first}
	drain:
		for len(batch) < 1000 {
			select {
			case o, ok := <-d.results:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := d.s.store.Record(ctx, batch)
		cancel()
		if err != nil {
			d.s.logger.ErrorContext(ctx, "webhooks: record attempts", "attempts", len(batch), "error", err.Error())
		}
	}
}
