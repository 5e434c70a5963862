package orders

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/orders/checkout"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// sweepFixture is one tenant whose Stripe account is the stateful fake,
// the orders handlers on a fresh database, and what they logged.
type sweepFixture struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	fake   *stripefake.Server
	svc    *Service
	srv    *orderServer
	tenant uuid.UUID
	fund   uuid.UUID
	// proc is the tenant's processor; a test may wrap it.
	proc *tenantproc.Account
	logs *syncBuffer
}

func newSweepFixture(t *testing.T) *sweepFixture {
	t.Helper()
	ctx := context.Background()
	pool := testPool(t)
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	f := &sweepFixture{t: t, pool: pool, fake: fake, tenant: uuid.Must(uuid.NewV7()), fund: uuid.Must(uuid.NewV7()), logs: &syncBuffer{}}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, f.tenant, f.fund); err != nil {
		t.Fatal(err)
	}
	f.proc = &tenantproc.Account{Processor: stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: "sk_test_" + f.tenant.String()}),
		Name: tenantproc.ProviderStripe, Mode: "test"}
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f.svc = New(pool, Config{Contacts: benchContacts{}, Processors: fixtureProcessors{f}, IdempotencyLease: time.Minute}, logger)
	f.srv = &orderServer{s: f.svc}
	p := authctx.Principal{TenantID: f.tenant.String(), KeyID: "k", KeyPrefix: "ak_test_sweep", Currency: "USD",
		Scopes: []string{scopes.OrdersCreate}, Features: []string{features.PaymentProcessor}}
	// A bank debit made on session records the donor's browser.
	md := metadata.Pairs(ratelimit.MetadataKey, "203.0.113.7", checkout.UserAgentKey, "Mozilla/5.0")
	f.ctx = authctx.NewIncomingContext(metadata.NewIncomingContext(ctx, md), p)
	return f
}

// fixtureProcessors answers the fixture's processor as it is now.
type fixtureProcessors struct{ f *sweepFixture }

func (p fixtureProcessors) ForTenant(_ context.Context, tenantID string) (tenantproc.Account, bool, error) {
	return *p.f.proc, tenantID == p.f.tenant.String(), nil
}

func (fixtureProcessors) ForNotification(context.Context, string, string) (tenantproc.NotificationTarget, bool, error) {
	return tenantproc.NotificationTarget{}, false, nil
}

// syncBuffer is a log buffer safe for concurrent sweeps.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pay is one payment of amount (in dollars, as the API takes it).
func pay(method, token, amount string) *ordersv1.PaymentInput {
	return &ordersv1.PaymentInput{PaymentMethod: method, PaymentToken: token, Amount: &typev1.Decimal{Value: amount}}
}

// order is a gift of total dollars to the General fund, paid by payments.
func (f *sweepFixture) order(key, total string, payments ...*ordersv1.PaymentInput) *ordersv1.CreateOrderRequest {
	return &ordersv1.CreateOrderRequest{TenantId: f.tenant.String(), ContactId: 1, IdempotencyKey: key,
		Donations: []*ordersv1.DonationInput{{FundId: f.fund.String(), Amount: &typev1.Decimal{Value: total}}}, Payments: payments}
}

// card is a keyed 18.00 card gift.
func (f *sweepFixture) card(key string) *ordersv1.CreateOrderRequest {
	return f.order(key, "18.00", pay("Card", "pm_card_visa", "18.00"))
}

// abandon sends req while Stripe acts on its charge but the answer is
// lost: the client gets the 503 after which it may retry with the key,
// and the claim keeps the charge. It returns the claim's order id.
func (f *sweepFixture) abandon(req *ordersv1.CreateOrderRequest, inject func()) uuid.UUID {
	f.t.Helper()
	if inject == nil {
		inject = func() { f.fake.LoseNextResponses(1) }
	}
	inject()
	_, err := f.srv.CreateOrder(f.ctx, req)
	if !apperr.IsKind(err, apperr.KindUnavailable) {
		f.t.Fatalf("create with Stripe's answer lost: err %v, want a 503", err)
	}
	state, orderID := f.claim(req.GetIdempotencyKey())
	if state != "pending" {
		f.t.Fatalf("claim after the 503 is %q, want pending", state)
	}
	return orderID
}

// claim returns the state and order id of the tenant's claim of key; ""
// when there is none.
func (f *sweepFixture) claim(key string) (string, uuid.UUID) {
	f.t.Helper()
	var state string
	var orderID uuid.UUID
	err := f.pool.QueryRow(context.Background(), `SELECT state, order_id FROM orders.idempotency_keys WHERE tenant_id = $1 AND key = $2`,
		f.tenant, key).Scan(&state, &orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", uuid.Nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return state, orderID
}

// intents returns the PaymentIntents made for an order.
// endSweepLease moves a swept claim's lease back by lease, so that it has
// run out as it would have once that time had passed.
func (f *sweepFixture) endSweepLease(key string, lease time.Duration) {
	f.t.Helper()
	tag, err := f.pool.Exec(context.Background(), `UPDATE orders.idempotency_keys SET lease_until = lease_until - make_interval(secs => $3)
		WHERE tenant_id = $1 AND key = $2 AND state = 'sweeping'`, f.tenant, key, lease.Seconds())
	if err != nil || tag.RowsAffected() != 1 {
		f.t.Fatalf("end the sweep's lease of claim %s: %v, %d rows", key, err, tag.RowsAffected())
	}
}

func (f *sweepFixture) intents(orderID uuid.UUID) []stripefake.PaymentIntent {
	var out []stripefake.PaymentIntent
	for _, pi := range f.fake.PaymentIntents() {
		if pi.Metadata["order_id"] == orderID.String() {
			out = append(out, pi)
		}
	}
	return out
}

// sweep runs one sweep of claims abandoned for longer than after.
func (f *sweepFixture) sweep(after, lease time.Duration) int {
	f.t.Helper()
	n, err := f.svc.NewSweeper(checkout.SweeperConfig{After: after, Lease: lease}).SweepOnce(context.Background())
	if err != nil {
		f.t.Fatalf("sweep: %v", err)
	}
	return n
}

// atOnce is the window of tests that sweep every ended lease at once.
const atOnce = time.Millisecond

// TestSweepGivesBackAbandonedCharges: a keyed order whose charge Stripe
// made but whose answer was lost, never retried: after the window the
// sweeper refunds a succeeded charge in full and cancels one not settled,
// then frees the key, and a retry with the key records a new order with
// one new charge.
func TestSweepGivesBackAbandonedCharges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     func(f *sweepFixture, key string) *ordersv1.CreateOrderRequest
		inject  func(f *sweepFixture) func()
		want    map[string]string // PaymentIntent status after the sweep, by amount
		charged int               // PaymentIntents of the retried order
	}{
		{
			name:    "card charged, answer lost",
			req:     func(f *sweepFixture, key string) *ordersv1.CreateOrderRequest { return f.card(key) },
			want:    map[string]string{"1800": "refunded"},
			charged: 1,
		},
		{
			name: "second payment unreachable after the first succeeded",
			req: func(f *sweepFixture, key string) *ordersv1.CreateOrderRequest {
				return f.order(key, "30.00", pay("Card", "pm_card_visa", "10.00"), pay("Card", "pm_card_mastercard", "20.00"))
			},
			inject: func(f *sweepFixture) func() {
				// The first charge goes through; the second meets a 500.
				return func() { f.proc.Processor = &failSecondCharge{Processor: f.proc.Processor} }
			},
			want:    map[string]string{"1000": "refunded"},
			charged: 2,
		},
		{
			name: "bank debit processing, answer lost",
			req: func(f *sweepFixture, key string) *ordersv1.CreateOrderRequest {
				return f.order(key, "50.00", pay("Ach", "pm_usBankAccount", "50.00"))
			},
			want:    map[string]string{"5000": "canceled"},
			charged: 1,
		},
		{
			name: "3-D Secure waiting, answer lost",
			req: func(f *sweepFixture, key string) *ordersv1.CreateOrderRequest {
				return f.order(key, "12.00", pay("Card", "pm_card_authenticationRequired", "12.00"))
			},
			want:    map[string]string{"1200": "canceled"},
			charged: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newSweepFixture(t)
			key := "abandoned-" + tc.name
			var inject func()
			if tc.inject != nil {
				inject = tc.inject(f)
			}
			orderID := f.abandon(tc.req(f, key), inject)
			f.proc.Processor = unwrap(f.proc.Processor)
			if n := f.sweep(atOnce, time.Minute); n != 1 {
				t.Fatalf("sweep released %d claims, want 1", n)
			}
			for _, pi := range f.intents(orderID) {
				got := pi.Status
				if pi.Status == "succeeded" && pi.AmountRefunded == pi.Amount {
					got = "refunded"
				}
				if want := tc.want[strconv.FormatInt(pi.Amount, 10)]; got != want {
					t.Errorf("PaymentIntent of %d is %s (refunded %d), want %s", pi.Amount, pi.Status, pi.AmountRefunded, want)
				}
				if refunds := f.fake.Refunds(pi.ID); len(refunds) > 1 {
					t.Errorf("PaymentIntent of %d refunded %d times", pi.Amount, len(refunds))
				}
			}
			if state, _ := f.claim(key); state != "" {
				t.Errorf("claim after the sweep is %q, want released", state)
			}
			if !strings.Contains(f.logs.String(), "released abandoned order claim") || !strings.Contains(f.logs.String(), orderID.String()) {
				t.Errorf("no log line names the released claim of order %s:\n%s", orderID, f.logs)
			}
			// The retry with the key is a new order, charged once.
			resp, err := f.srv.CreateOrder(f.ctx, tc.req(f, key))
			if err != nil {
				t.Fatalf("retry after the sweep: %v", err)
			}
			again := uuid.MustParse(resp.GetOrder().GetId())
			if again == orderID {
				t.Error("the retry after the sweep recorded the swept order id")
			}
			if got := f.intents(again); len(got) != tc.charged {
				t.Errorf("the retried order made %d PaymentIntents, want %d", len(got), tc.charged)
			}
		})
	}
}

// failSecondCharge makes the second charge through it fail as if Stripe
// were down, without asking Stripe.
type failSecondCharge struct {
	processor.Processor
	mu sync.Mutex
	n  int
}

func (p *failSecondCharge) Charge(ctx context.Context, r processor.ChargeRequest) (processor.ChargeResult, error) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	if n == 2 {
		return processor.ChargeResult{}, &processor.UnavailableError{Err: errors.New("stripe answered HTTP 500")}
	}
	return p.Processor.Charge(ctx, r)
}

// unwrap returns the processor a test wrapper wraps.
func unwrap(p processor.Processor) processor.Processor {
	switch w := p.(type) {
	case *failSecondCharge:
		return w.Processor
	case *flakyRefunds:
		return w.Processor
	}
	return p
}

// TestSweepSparesRetriedClaims: a claim the client retries is its
// client's: retried and recorded before the window, it is never swept;
// still within the window, it is not taken, and the retry that comes
// later records the order with the charge first made.
func TestSweepSparesRetriedClaims(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)

	orderID := f.abandon(f.card("retried"), nil)
	resp, err := f.srv.CreateOrder(f.ctx, f.card("retried"))
	if err != nil || resp.GetOrder().GetId() != orderID.String() {
		t.Fatalf("retry: %v, %v; want the claim's order %s", resp.GetOrder().GetId(), err, orderID)
	}
	if n := f.sweep(atOnce, time.Minute); n != 0 {
		t.Errorf("sweep of a recorded order released %d claims", n)
	}

	late := f.abandon(f.card("within the window"), nil)
	if n := f.sweep(time.Hour, time.Minute); n != 0 {
		t.Errorf("sweep within the window released %d claims", n)
	}
	if state, _ := f.claim("within the window"); state != "pending" {
		t.Errorf("claim within the window is %q, want pending", state)
	}
	resp, err = f.srv.CreateOrder(f.ctx, f.card("within the window"))
	if err != nil || resp.GetOrder().GetId() != late.String() {
		t.Fatalf("late retry: %v, %v; want the claim's order %s", resp.GetOrder().GetId(), err, late)
	}
	for _, id := range []uuid.UUID{orderID, late} {
		pis := f.intents(id)
		if len(pis) != 1 || pis[0].Status != "succeeded" || pis[0].AmountRefunded != 0 {
			t.Errorf("charges of retried order %s: %+v, want one, succeeded, not refunded", id, pis)
		}
	}
}

// flakyRefunds makes refunds fail as if Stripe were down, before or
// after Stripe acted (a lost answer), while fail is set; with stale, the
// search shows no charge refunded, as an index behind the refunds would.
type flakyRefunds struct {
	processor.Processor
	mu                 sync.Mutex
	fail, after, stale bool
}

func (p *flakyRefunds) FindCharges(ctx context.Context, tenantID, orderID string) ([]processor.FoundCharge, error) {
	found, err := p.Processor.FindCharges(ctx, tenantID, orderID)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range found {
		if p.stale {
			found[i].RefundedMinor = 0
		}
	}
	return found, err
}

func (p *flakyRefunds) Refund(ctx context.Context, r processor.RefundRequest) (processor.Refund, error) {
	p.mu.Lock()
	fail, after := p.fail, p.after
	p.mu.Unlock()
	if !fail {
		return p.Processor.Refund(ctx, r)
	}
	if after {
		if _, err := p.Processor.Refund(ctx, r); err != nil {
			return processor.Refund{}, err
		}
	}
	return processor.Refund{}, &processor.UnavailableError{Err: errors.New("stripe's answer was lost")}
}

// TestSweepRetriedAfterFailure: a sweep that fails at Stripe leaves the
// claim taken ('sweeping': a retry with the key is told the order is in
// progress) until its lease ends; the next sweep then finishes it, and
// the charge is refunded once whatever the failure was.
func TestSweepRetriedAfterFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		inject func(f *sweepFixture, refunds *flakyRefunds)
		// recovers: Stripe answers again for the next sweep.
		recovers bool
	}{
		{"search unavailable", func(f *sweepFixture, _ *flakyRefunds) { f.fake.FailNext(1, 503) }, true},
		{"search rate limited", func(f *sweepFixture, _ *flakyRefunds) { f.fake.FailNext(1, 429) }, true},
		{"refund unavailable", func(_ *sweepFixture, r *flakyRefunds) { r.fail = true }, true},
		{"refund made, answer lost", func(_ *sweepFixture, r *flakyRefunds) { r.fail, r.after = true, true }, true},
		// The search's index still shows the charge unrefunded: the
		// refund is sent again, under the same key, and Stripe replays it.
		{"refund made, answer lost, index behind", func(_ *sweepFixture, r *flakyRefunds) { r.fail, r.after, r.stale = true, true, true }, true},
		{"stripe unreachable", func(f *sweepFixture, _ *flakyRefunds) { f.fake.Close() }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newSweepFixture(t)
			orderID := f.abandon(f.card("k"), nil)
			refunds := &flakyRefunds{Processor: f.proc.Processor}
			f.proc.Processor = refunds
			tc.inject(f, refunds)

			// The failed sweep's lease outlasts the checks made within it
			// on any machine (300 ms did not always, on a loaded one: the
			// second sweep came after it, took the claim over and, Stripe
			// answering again, released it); then it is made to have run
			// out, as the passing of that time looks to the sweeper.
			const lease = time.Minute
			if n := f.sweep(atOnce, lease); n != 0 {
				t.Fatalf("failed sweep released %d claims", n)
			}
			if state, id := f.claim("k"); state != "sweeping" || id != orderID {
				t.Fatalf("claim after a failed sweep: %q %s, want sweeping %s", state, id, orderID)
			}
			if _, err := f.srv.CreateOrder(f.ctx, f.card("k")); !apperr.IsKind(err, apperr.KindConflict) {
				t.Errorf("retry while the claim is swept: %v, want 409 in progress", err)
			}
			if n := f.sweep(atOnce, lease); n != 0 {
				t.Errorf("a sweep within the failed sweep's lease released %d claims", n)
			}
			if !strings.Contains(f.logs.String(), "left for a later sweep") {
				t.Errorf("the failed sweep logged no error:\n%s", f.logs)
			}

			refunds.mu.Lock()
			refunds.fail = false
			refunds.mu.Unlock()
			if !tc.recovers {
				return
			}
			f.endSweepLease("k", lease)
			if n := f.sweep(atOnce, lease); n != 1 {
				t.Fatalf("sweep after the lease released %d claims, want 1", n)
			}
			pis := f.intents(orderID)
			if len(pis) != 1 || pis[0].AmountRefunded != pis[0].Amount || len(f.fake.Refunds(pis[0].ID)) != 1 {
				t.Errorf("charge after two sweeps: %+v, refunds %+v; want refunded once in full", pis, f.fake.Refunds(pis[0].ID))
			}
			// Every refund request carried the charge's own key: one
			// acted, any other was Stripe's replay of it.
			acted := 0
			for _, r := range f.fake.Requests() {
				if r.Path == "/v1/refunds" {
					if r.IdempotencyKey != "undo/"+pis[0].ID {
						t.Errorf("refund with key %q, want undo/%s", r.IdempotencyKey, pis[0].ID)
					}
					if (r.Status == 200 || r.Lost) && !r.Replay {
						acted++
					}
				}
			}
			if acted != 1 {
				t.Errorf("%d refund requests acted at Stripe, want 1", acted)
			}
		})
	}
}

// TestSweepersRace: two sweepers running at once sweep each abandoned
// claim once: every charge refunded exactly once, every key released.
// Another tenant's claim under the same key, still leased, is untouched.
func TestSweepersRace(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	const claims = 6
	var orders []uuid.UUID
	for i := range claims {
		orders = append(orders, f.abandon(f.card("race-"+strconv.Itoa(i)), nil))
	}
	other := uuid.Must(uuid.NewV7())
	if _, err := f.svc.store.ClaimKey(context.Background(), other, "race-0", []byte("hash"), uuid.Must(uuid.NewV7()), time.Hour); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	released := make([]int, 2)
	for i := range released {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := f.svc.NewSweeper(checkout.SweeperConfig{After: atOnce, Lease: time.Minute}).SweepOnce(context.Background())
			if err != nil {
				t.Error(err)
			}
			released[i] = n
		}()
	}
	wg.Wait()
	if released[0]+released[1] != claims {
		t.Errorf("sweepers released %v claims, want %d in all", released, claims)
	}
	for _, id := range orders {
		pis := f.intents(id)
		if len(pis) != 1 || pis[0].AmountRefunded != pis[0].Amount || len(f.fake.Refunds(pis[0].ID)) != 1 {
			t.Errorf("charges of order %s: %+v; want one, refunded once", id, pis)
		}
	}
	var left int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders.idempotency_keys WHERE tenant_id = $1`, f.tenant).Scan(&left); err != nil {
		t.Fatal(err)
	}
	var kept string
	if err := f.pool.QueryRow(context.Background(), `SELECT state FROM orders.idempotency_keys WHERE tenant_id = $1 AND key = 'race-0'`, other).Scan(&kept); err != nil {
		t.Fatalf("the other tenant's claim: %v", err)
	}
	if left != 0 || kept != "pending" {
		t.Errorf("%d claims left, the other tenant's %q; want 0 and pending", left, kept)
	}
}

// TestSweepClaimWithoutCharge: a claim whose request never got as far as
// charging (its process died before; a cash order) is released without
// asking Stripe.
func TestSweepClaimWithoutCharge(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	if _, err := f.svc.store.ClaimKey(context.Background(), f.tenant, "died", []byte("hash"), uuid.Must(uuid.NewV7()), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if n := f.sweep(atOnce, time.Minute); n != 1 {
		t.Errorf("sweep released %d claims, want 1", n)
	}
	if n := len(f.fake.Requests()); n != 0 {
		t.Errorf("%d requests to Stripe for a claim that charged nothing", n)
	}
}

// TestSweepLeaseTakenOver: a sweep whose lease ran out is taken over by
// another; only the sweep that holds the claim may release it.
func TestSweepLeaseTakenOver(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	ctx := context.Background()
	st := f.svc.store
	if _, err := st.ClaimKey(ctx, f.tenant, "slow", []byte("hash"), uuid.Must(uuid.NewV7()), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	first, ok, err := st.TakeAbandonedClaim(ctx, atOnce, time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("first take: %v %v", ok, err)
	}
	time.Sleep(5 * time.Millisecond)
	second, ok, err := st.TakeAbandonedClaim(ctx, atOnce, time.Minute)
	if err != nil || !ok || second.OrderID != first.OrderID {
		t.Fatalf("take-over: %+v %v %v", second, ok, err)
	}
	if _, ok, _ := st.TakeAbandonedClaim(ctx, atOnce, time.Minute); ok {
		t.Error("a claim under a sweep's lease was taken again")
	}
	if ok, err := st.ReleaseSweptClaim(ctx, first); err != nil || ok {
		t.Errorf("release by the sweep that lost the claim: %v %v, want nothing released", ok, err)
	}
	if ok, err := st.ReleaseSweptClaim(ctx, second); err != nil || !ok {
		t.Errorf("release by the sweep that holds the claim: %v %v", ok, err)
	}
}

// counter reads one labelled series of a counter from the default
// registry, where telemetry.Register put the sweeper's.
func counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestSweepCounters: the sweeper counts claims by result and charges by
// what it did. Not parallel, so that no other sweep moves the counters.
func TestSweepCounters(t *testing.T) {
	f := newSweepFixture(t)
	read := func() [3]float64 {
		return [3]float64{counter(t, "almoner_orders_abandoned_claims_total", "result", "released"),
			counter(t, "almoner_orders_abandoned_claims_total", "result", "failed"),
			counter(t, "almoner_orders_abandoned_charges_total", "action", "refunded")}
	}
	before := read()
	f.abandon(f.card("counted"), nil)
	f.fake.FailNext(1, 500)
	const lease = 100 * time.Millisecond
	f.sweep(atOnce, lease)
	time.Sleep(lease + 20*time.Millisecond)
	f.sweep(atOnce, lease)
	after := read()
	if got := [3]float64{after[0] - before[0], after[1] - before[1], after[2] - before[2]}; got != [3]float64{1, 1, 1} {
		t.Errorf("released, failed, refunded moved by %v, want 1 each", got)
	}
}

// TestAbandonedOrderAfterSetting: ALMONER_ABANDONED_ORDER_AFTER defaults
// to an hour and is refused outside its bounds.
func TestAbandonedOrderAfterSetting(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration // 0: refused
	}{
		{"", time.Hour},
		{"30m", 30 * time.Minute},
		{"12h", 12 * time.Hour},
		{"10m", 10 * time.Minute},
		{"9m", 0},
		{"13h", 0},
		{"24h", 0},
		{"0", 0},
		{"soon", 0},
	} {
		got, err := checkout.AbandonedOrderAfter(func(key string) string {
			if key == "ALMONER_ABANDONED_ORDER_AFTER" {
				return tc.value
			}
			return ""
		})
		if got != tc.want || (err != nil) != (tc.want == 0) {
			t.Errorf("ALMONER_ABANDONED_ORDER_AFTER=%q: %s, %v; want %s", tc.value, got, err, tc.want)
		}
	}
}

// TestModuleStartsSweeper: the module runs the sweeper where the runner
// runs, with the window it was given, and refuses a window out of bounds.
func TestModuleStartsSweeper(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]string
		after    time.Duration // 0: no sweeper
		refused  bool
	}{
		{"default", nil, time.Hour, false},
		{"set", map[string]string{"ALMONER_ABANDONED_ORDER_AFTER": "2h", "ALMONER_ORDERS_RUNNER_INTERVAL": "10s"}, 2 * time.Hour, false},
		{"runner off", map[string]string{"ALMONER_ORDERS_RUNNER": "false"}, 0, false},
		{"a day", map[string]string{"ALMONER_ABANDONED_ORDER_AFTER": "24h"}, 0, true},
	} {
		svc, err := Module.New(context.Background(), service.Deps{Config: func(k string) string { return tc.settings[k] }})
		if tc.refused {
			if err == nil || !strings.Contains(err.Error(), "ALMONER_ABANDONED_ORDER_AFTER") {
				t.Errorf("%s: err %v, want the setting refused", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		w, wcfg := svc.(*Service).sweeper, svc.(*Service).cfg.Sweeper
		switch {
		case tc.after == 0 && w != nil:
			t.Errorf("%s: a sweeper runs", tc.name)
		case tc.after != 0 && (w == nil || wcfg == nil || wcfg.After != tc.after):
			t.Errorf("%s: sweeper %+v (%+v), want one sweeping after %s", tc.name, w, wcfg, tc.after)
		}
	}
}

// TestSweepStopsOnARepeat: a sweep whose lease is shorter than a failing
// claim takes to fail meets the claim again in the same sweep; it stops
// there instead of going round while Stripe is down.
func TestSweepStopsOnARepeat(t *testing.T) {
	t.Parallel()
	f := newSweepFixture(t)
	f.abandon(f.card("k"), nil)
	f.fake.Close()
	done := make(chan int, 1)
	go func() { done <- f.sweep(atOnce, time.Microsecond) }()
	select {
	case n := <-done:
		if n != 0 {
			t.Errorf("sweep released %d claims with Stripe down", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep goes round a claim it cannot finish")
	}
	if state, _ := f.claim("k"); state != "sweeping" {
		t.Errorf("claim %q, want sweeping", state)
	}
}
