package checkout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// DefaultAbandonedOrderAfter is how long a keyed order's claim waits for
// its client's retry, once its lease ended, before the sweeper gives back
// its charges (ALMONER_ABANDONED_ORDER_AFTER). An hour leaves a client's
// retries with backoff time to finish the order with the charge already
// made, and leaves Stripe's search index (which may lag a charge by a
// minute, more in an incident) time to hold every charge of the order. It
// is well under the 24 hours Stripe keeps an idempotency key: a retry
// later than that would charge the donor a second time instead of
// replaying the first charge, so the claim must be swept first, with time
// left for sweeps that fail while Stripe is down.
const DefaultAbandonedOrderAfter = time.Hour

// Bounds of ALMONER_ABANDONED_ORDER_AFTER: not so short that a charge is
// missing from Stripe's search when the claim is swept, not so long that
// Stripe forgets the charges' idempotency keys before it.
const (
	minAbandonedOrderAfter = 10 * time.Minute
	maxAbandonedOrderAfter = 12 * time.Hour
)

// defaultSweepLease is how long a sweep holds a claim: a search and a few
// refunds, each bounded by stripeproc.DefaultTimeout. A sweep that fails
// or dies leaves the claim to the first sweep after it.
const defaultSweepLease = 5 * time.Minute

// SweeperConfig configures the sweeper of abandoned keyed-order claims.
type SweeperConfig struct {
	// Interval is the time between sweeps.
	Interval time.Duration
	// After is how long a pending claim's lease must have ended, with no
	// retry taking it over, before the claim is swept.
	After time.Duration
	// Lease is how long a sweep holds a claim before another may take it
	// over; defaultSweepLease when zero.
	Lease time.Duration
	// AfterSweep, when set, runs after each sweep: the service's finishing
	// of refunds and voids left in flight.
	AfterSweep func(context.Context)
}

// Sweeper gives back the charges of keyed orders that were never
// recorded and never retried, then frees their keys. A request that fails
// while a charge's outcome is unknown keeps its claim (and so its
// charges) for the client's retry (giveBackKey); when no retry comes, the
// donor's money would stay charged with no order. Every replica may run
// one: claims are taken one at a time, under a lease.
type Sweeper struct {
	s    *Service
	cfg  SweeperConfig
	loop *service.Loop
}

// NewSweeper returns a stopped sweeper on the service's store and
// processors.
func (s *Service) NewSweeper(cfg SweeperConfig) *Sweeper {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.After <= 0 {
		cfg.After = DefaultAbandonedOrderAfter
	}
	if cfg.Lease <= 0 {
		cfg.Lease = defaultSweepLease
	}
	w := &Sweeper{s: s, cfg: cfg}
	w.loop = service.NewLoop(cfg.Interval, w.step)
	return w
}

// Start sweeps now and then every interval, until Stop.
func (w *Sweeper) Start() { w.loop.Start() }

// Stop ends the sweeper. A claim in hand keeps its lease and is swept
// again after it.
func (w *Sweeper) Stop(ctx context.Context) error { return w.loop.Stop(ctx) }

func (w *Sweeper) step(ctx context.Context) {
	if _, err := w.SweepOnce(ctx); err != nil && ctx.Err() == nil {
		w.s.logger.ErrorContext(ctx, "sweep abandoned order claims", "error", err)
	}
	if w.cfg.AfterSweep != nil {
		w.cfg.AfterSweep(ctx)
	}
}

// SweepOnce sweeps every claim due now and returns how many it released.
// A claim whose sweep fails stays taken until its lease ends, and is left
// to the first sweep after it: should the lease end within this sweep,
// which takes the claim again, this sweep stops rather than go round
// while the processor is down.
func (w *Sweeper) SweepOnce(ctx context.Context) (released int, err error) {
	type claimKey struct {
		tenant uuid.UUID
		key    string
	}
	seen := map[claimKey]bool{}
	for ctx.Err() == nil {
		c, ok, err := w.s.store.TakeAbandonedClaim(ctx, w.cfg.After, w.cfg.Lease)
		if err != nil || !ok {
			return released, err
		}
		if seen[claimKey{c.TenantID, c.Key}] {
			return released, nil
		}
		seen[claimKey{c.TenantID, c.Key}] = true
		ok, err = w.sweep(ctx, c)
		if err != nil {
			abandonedClaims.WithLabelValues("failed").Inc()
			w.s.logger.ErrorContext(ctx, "sweep abandoned order claim: left for a later sweep", "tenant_id", c.TenantID,
				"order_id", c.OrderID, "idempotency_key", c.Key, "retry_after", w.cfg.Lease, "error", err)
			continue
		}
		if ok {
			released++
		}
	}
	return released, ctx.Err()
}

// sweep gives back the charges of one abandoned claim, then releases its
// key, so that a retry with it records a new order with new charges. It
// reports whether it released the claim.
func (w *Sweeper) sweep(ctx context.Context, c store.AbandonedClaim) (bool, error) {
	given, err := w.giveBackCharges(ctx, c)
	if err != nil {
		return false, err
	}
	ok, err := w.s.store.ReleaseSweptClaim(ctx, c)
	if err != nil {
		return false, err
	}
	if !ok {
		// Our lease ran out and another sweep took the claim over: it
		// gives the same charges back under the same keys, and releases.
		w.s.logger.WarnContext(ctx, "abandoned order claim taken over by another sweep", "tenant_id", c.TenantID, "order_id", c.OrderID)
		return false, nil
	}
	abandonedClaims.WithLabelValues("released").Inc()
	w.s.logger.InfoContext(ctx, "released abandoned order claim", "tenant_id", c.TenantID, "order_id", c.OrderID,
		"idempotency_key", c.Key, "charges_given_back", given)
	return true, nil
}

// errNoProcessor: the tenant has no processor now, so the charges of a
// claim that charged cannot be looked for; the claim waits until it has.
var errNoProcessor = errors.New("the tenant has no payment processor now: its charges cannot be looked for")

// giveBackCharges finds the charges made for the claim's order at the
// tenant's processor and gives each back; it returns how many it gave
// back. A claim that never got as far as charging asks no processor.
func (w *Sweeper) giveBackCharges(ctx context.Context, c store.AbandonedClaim) (int, error) {
	if !c.Charged {
		return 0, nil
	}
	tp, ok, err := w.s.processors.ForTenant(ctx, c.TenantID.String())
	if err != nil {
		return 0, fmt.Errorf("find the tenant's processor: %w", err)
	}
	if !ok {
		return 0, errNoProcessor
	}
	charges, err := tp.FindCharges(ctx, c.TenantID.String(), c.OrderID.String())
	if err != nil {
		return 0, fmt.Errorf("find the charges of order %s: %w", c.OrderID, err)
	}
	given := 0
	for _, ch := range charges {
		done, err := w.giveBackCharge(ctx, tp, c, ch)
		if err != nil {
			return given, fmt.Errorf("give back charge %s: %w", ch.Reference, err)
		}
		if done {
			given++
		}
	}
	return given, nil
}

// giveBackCharge refunds what is left of a succeeded charge and cancels
// one that has not settled; a declined or cancelled one took nothing. It
// reports whether it asked the processor for anything.
func (w *Sweeper) giveBackCharge(ctx context.Context, tp tenantproc.Account, c store.AbandonedClaim, ch processor.FoundCharge) (bool, error) {
	action, amount := "", ch.AmountMinor
	switch ch.Outcome {
	case processor.Succeeded:
		action, amount = "refunded", ch.AmountMinor-ch.RefundedMinor
		if amount <= 0 {
			return false, nil
		}
	case processor.Processing, processor.RequiresAction:
		action = "cancelled"
	default:
		return false, nil
	}
	re, err := tenantproc.GiveBack(ctx, tp, ch.Reference, ch.Outcome, amount)
	if err != nil {
		return false, err
	}
	abandonedCharges.WithLabelValues(action).Inc()
	w.s.logger.InfoContext(ctx, "gave back a charge of an abandoned order claim", "tenant_id", c.TenantID, "order_id", c.OrderID,
		"idempotency_key", c.Key, "processor", tp.Name, "processor_reference", ch.Reference, "action", action,
		"amount_minor", amount, "currency", ch.Currency, "refund_id", re.ID)
	return true, nil
}

// Counters of the sweeper: claims by result, charges by what was done.
var (
	abandonedClaims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "almoner_orders_abandoned_claims_total",
		Help: "Keyed-order claims abandoned without an order, by sweep: released (charges given back, key free) or failed (swept again later).",
	}, []string{"result"})
	abandonedCharges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "almoner_orders_abandoned_charges_total",
		Help: "Charges of abandoned keyed orders the sweeper gave back, by action: refunded or cancelled.",
	}, []string{"action"})
)

func init() { telemetry.Register(abandonedClaims, abandonedCharges) }

// AbandonedOrderAfter reads ALMONER_ABANDONED_ORDER_AFTER within its
// bounds (sweeper.go says why each).
func AbandonedOrderAfter(c config.Source) (time.Duration, error) {
	d, err := c.Duration("ALMONER_ABANDONED_ORDER_AFTER", DefaultAbandonedOrderAfter)
	if err != nil {
		return 0, err
	}
	if d < minAbandonedOrderAfter || d > maxAbandonedOrderAfter {
		return 0, fmt.Errorf("ALMONER_ABANDONED_ORDER_AFTER=%s: must be between %s and %s (well under the 24 hours Stripe keeps an idempotency key)",
			d, minAbandonedOrderAfter, maxAbandonedOrderAfter)
	}
	return d, nil
}
