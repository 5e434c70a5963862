package webhooks

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/webhooks/store"
)

// harness is one webhooks service on a fresh database with a local HTTPS
// receiver. Its dispatcher never ticks by itself: tests call enqueue,
// dispatch or tick and then look at what happened, so every count is exact.
type harness struct {
	s      *Service
	d      *Dispatcher
	pool   *pgxpool.Pool
	tenant uuid.UUID
	rc     *httptest.Server

	mu  sync.Mutex
	got []delivered
	// gate, when set, holds every request until it is closed.
	gate chan struct{}
	// status is the receiver's answer; 0 means 204.
	status atomic.Int32
}

// eventBody is the webhook event body as a receiver decodes it.
type eventBody struct {
	ID        string    `json:"id"`
	Event     string    `json:"event"`
	Timestamp string    `json:"timestamp"`
	Data      eventData `json:"data"`
}

type eventData struct {
	EntityType string          `json:"entity_type"`
	EntityID   string          `json:"entity_id"`
	Action     string          `json:"action"`
	Changes    json.RawMessage `json:"changes"`
	UserID     string          `json:"user_id"`
}

// delivered is one request the receiver got.
type delivered struct {
	header http.Header
	body   eventBody
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, false)
}

// newHarnessWith is newHarness; with running, the service is started as a
// process starts it (its own tick loops, cfg.Tick kept) and the test must
// call h.s.Stop itself.
func newHarnessWith(t *testing.T, cfg Config, running bool) *harness {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, Migrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h := &harness{pool: pool, tenant: uuid.Must(uuid.NewV7())}
	h.rc = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b eventBody
		_ = json.Unmarshal(raw, &b)
		h.mu.Lock()
		h.got = append(h.got, delivered{header: r.Header.Clone(), body: b})
		gate := h.gate
		h.mu.Unlock()
		if gate != nil {
			<-gate
		}
		code := int(h.status.Load())
		if code == 0 {
			code = http.StatusNoContent
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(h.rc.Close)
	roots := x509.NewCertPool()
	roots.AddCert(h.rc.Certificate())
	if !running {
		// A tick the test never waits for: the loop is not started
		// anyway, and nothing here may depend on timing.
		cfg.Tick = time.Hour
	}
	cfg.AllowPrivate, cfg.RootCAs = true, roots
	if cfg.Features == nil {
		cfg.Features = func(context.Context, string) (Firing, error) { return Firing{On: true}, nil }
	}
	if cfg.SecretKey == nil {
		cfg.SecretKey = make([]byte, 32)
	}
	h.s, err = New(pool, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.d = h.s.Dispatcher()
	if running {
		if err := h.s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.release)
		return h
	}
	h.d.startWorkers()
	t.Cleanup(func() {
		h.mu.Lock()
		if h.gate != nil {
			select {
			case <-h.gate:
			default:
				close(h.gate)
			}
		}
		h.mu.Unlock()
		h.d.inflight.Wait()
		h.d.stopWorkers()
	})
	return h
}

// endpoint registers a live endpoint of the harness's tenant for types.
func (h *harness) endpoint(t *testing.T, types ...string) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	_, err := h.s.store.CreateEndpoint(context.Background(), store.Endpoint{
		TenantID: h.tenant, ID: id, Name: "hook", URL: h.rc.URL + "/hook", EventTypes: types,
		SecretBox: h.s.sealer.Seal([]byte(newSecret()), id[:]),
	}, "system")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// write commits n contact.created events in one transaction, entity ids
// prefix-0 … prefix-(n-1), and waits until the audit reader can see them:
// the reader stops below the oldest transaction running anywhere on the
// server, and other tests share the server, so "committed" is not yet
// "readable". Waiting for that condition keeps the counts below exact.
func (h *harness) write(t *testing.T, prefix string, n int) {
	t.Helper()
	h.writeCtx(t, context.Background(), prefix, n)
}

// writeCtx is write with the writer's context (and so its span).
func (h *harness) writeCtx(t *testing.T, ctx context.Context, prefix string, n int) {
	t.Helper()
	h.waitVisible(t, h.record(t, ctx, prefix, n))
}

// record commits n contact events in one transaction and returns its id,
// without waiting for the audit horizon to pass it.
func (h *harness) record(t *testing.T, ctx context.Context, prefix string, n int) uint64 {
	t.Helper()
	tx, err := h.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit; the test fails elsewhere
	var xid uint64
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text::numeric::bigint`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: h.tenant.String(), EntityType: "Contact",
			EntityID: fmt.Sprintf("%s-%d", prefix, i), Action: audit.Created, Actor: "system"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return xid
}

// waitVisible waits until transaction xid is below the audit horizon, so
// the dispatcher can read its events.
func (h *harness) waitVisible(t *testing.T, xid uint64) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		var visible bool
		if err := h.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::numeric::bigint > $1`, xid).Scan(&visible); err != nil {
			t.Fatal(err)
		}
		if visible {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a transaction elsewhere on the server kept event transaction %d below the audit horizon for a minute", xid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// queued counts the deliveries queued for an endpoint.
func (h *harness) queued(t *testing.T, endpoint uuid.UUID) int {
	t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.deliveries WHERE tenant_id = $1 AND endpoint_id = $2`,
		h.tenant, endpoint).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// settle waits for the sends in flight to finish and their outcomes to be
// recorded (recorded is the number of attempts expected in total), and
// returns what the receiver got.
func (h *harness) settle(t *testing.T, recorded int) []delivered {
	t.Helper()
	h.d.inflight.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := h.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks.attempts WHERE tenant_id = $1`, h.tenant).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == recorded {
			break
		}
		if n > recorded || time.Now().After(deadline) {
			t.Fatalf("%d attempts recorded, want %d", n, recorded)
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]delivered(nil), h.got...)
}

// TestDispatcherSpecLimits checks the spec's defaults: one enqueue step
// queues at most 500 of an endpoint's events, one dispatch step sends at
// most 100 deliveries.
func TestDispatcherSpecLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}) // zero limits: the spec's defaults
	if h.s.cfg.EnqueueLimit != 500 || h.s.cfg.SendLimit != 100 {
		t.Fatalf("defaults: enqueue %d, send %d; want the spec's 500 and 100", h.s.cfg.EnqueueLimit, h.s.cfg.SendLimit)
	}
	ep := h.endpoint(t, "contact.created")
	h.write(t, "c", 600)
	ctx := context.Background()

	h.d.enqueue(ctx)
	if got := h.queued(t, ep); got != 500 {
		t.Fatalf("after one enqueue: %d queued, want 500", got)
	}
	h.d.enqueue(ctx)
	if got := h.queued(t, ep); got != 600 {
		t.Fatalf("after two: %d queued, want 600", got)
	}

	h.d.dispatch(ctx) // 600 due
	if got := h.settle(t, 100); len(got) != 100 {
		t.Fatalf("one dispatch of 600 due deliveries sent %d, want 100", len(got))
	}
	h.d.tick(ctx) // nothing new to enqueue; 500 due
	got := h.settle(t, 200)
	if len(got) != 200 {
		t.Fatalf("after a tick: %d sent, want 200", len(got))
	}
	seen := map[string]bool{}
	for _, g := range got {
		if seen[g.body.ID] {
			t.Errorf("event %s sent twice", g.body.ID)
		}
		seen[g.body.ID] = true
	}
	var pending int
	if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries WHERE state = 'pending'`).Scan(&pending); err != nil || pending != 400 {
		t.Errorf("pending = %d, %v; want 400", pending, err)
	}
}

// TestDispatcherSmallLimits checks configured limits: the enqueue limit
// is per endpoint, the send limit is across endpoints and counts the sends
// still in flight from earlier ticks.
func TestDispatcherSmallLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{EnqueueLimit: 7, SendLimit: 3})
	a := h.endpoint(t, "contact.created")
	b := h.endpoint(t, "contact.created")
	other := h.endpoint(t, "order.created")
	h.write(t, "c", 20)
	ctx := context.Background()

	for i, want := range []int{7, 14, 20, 20} {
		h.d.enqueue(ctx)
		if ga, gb, gother := h.queued(t, a), h.queued(t, b), h.queued(t, other); ga != want || gb != want || gother != 0 {
			t.Fatalf("after enqueue %d: queued %d and %d (and %d unsubscribed), want %d each (and 0)", i+1, ga, gb, gother, want)
		}
	}

	// The receiver holds the first three requests: the next dispatch finds
	// no free slot and claims nothing.
	gate := make(chan struct{})
	h.mu.Lock()
	h.gate = gate
	h.mu.Unlock()
	h.d.dispatch(ctx)
	h.waitReceived(t, 3)
	h.d.dispatch(ctx)
	h.mu.Lock()
	h.gate = nil
	h.mu.Unlock()
	close(gate)
	if got := h.settle(t, 3); len(got) != 3 {
		t.Fatalf("with every slot busy a dispatch sent more: %d requests, want 3", len(got))
	}

	h.d.dispatch(ctx)
	got := h.settle(t, 6)
	if len(got) != 6 {
		t.Fatalf("after a second dispatch: %d sent, want 6", len(got))
	}
	var claimed int
	if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries WHERE attempts > 0`).Scan(&claimed); err != nil || claimed != 6 {
		t.Errorf("deliveries attempted = %d, %v; want 6", claimed, err)
	}
}

// fakeAuth answers the feature lookup and the validation epoch as the auth
// service does: turning the flag moves the epoch, and the change is
// answered one window after it (here: the fake clock moves a window on).
type fakeAuth struct {
	mu      sync.Mutex
	on      bool
	since   time.Time // when on last went from false to true (the wall clock, as the database's)
	epoch   int64
	now     time.Time
	window  time.Duration
	lookups int
	// during, when set, runs inside the next lookup after the flag was
	// read (and is then cleared): what happens while the answer travels.
	during func()
}

func (f *fakeAuth) lookup(context.Context, string) (Firing, error) {
	f.mu.Lock()
	f.lookups++
	answer, during := Firing{On: f.on, Since: f.since}, f.during
	if !f.on {
		answer.Since = time.Time{}
	}
	f.during = nil
	f.mu.Unlock()
	if during != nil {
		during()
	}
	return answer, nil
}

func (f *fakeAuth) readEpoch(context.Context) (int64, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch, f.window, nil
}

func (f *fakeAuth) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// set turns the flag and returns once the change is answered.
func (f *fakeAuth) set(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on && !f.on {
		f.since = time.Now()
	}
	f.on = on
	f.epoch++
	f.now = f.now.Add(f.window)
}

func (f *fakeAuth) lookupCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookups
}

// TestDispatcherFeatureFlag checks webhooks:enabled: the flag is cached
// under the validation epoch, so an event written once turning it off has
// been answered is never queued; while it is off the tenant's events are
// passed over, and once it is on again those events still never arrive and
// the events written after it do.
func TestDispatcherFeatureFlag(t *testing.T) {
	t.Parallel()
	auth := &fakeAuth{on: true, epoch: 1, now: time.Now(), window: time.Hour}
	h := newHarness(t, Config{Features: auth.lookup, Epoch: auth.readEpoch})
	h.s.features.now = auth.clock
	ep := h.endpoint(t, "contact.created")
	ctx := context.Background()

	h.write(t, "first", 1)
	h.d.tick(ctx)
	if got := h.settle(t, 1); len(got) != 1 {
		t.Fatalf("flag on: %d sent, want 1", len(got))
	}
	h.d.tick(ctx)
	before := auth.lookupCount()
	h.write(t, "second", 1)
	h.d.tick(ctx)
	if got := h.settle(t, 2); len(got) != 2 || auth.lookupCount() != before {
		t.Fatalf("flag on, within the lease: %d sent, %d lookups; want 2 sent from the cached answer", len(got), auth.lookupCount()-before)
	}

	// Off, answered; then at once an event. The cached "on" is within an
	// hour's lease by its own clock, yet must not be used.
	auth.set(false)
	h.write(t, "off", 3)
	h.d.tick(ctx)
	h.d.tick(ctx)
	if got := h.settle(t, 2); len(got) != 2 || h.queued(t, ep) != 2 {
		t.Fatalf("flag off: %d sent, %d queued; want only the two from before", len(got), h.queued(t, ep))
	}

	auth.set(true)
	h.d.tick(ctx)
	if got := h.settle(t, 2); len(got) != 2 {
		t.Fatalf("flag turned on: %d events of the off period sent", len(got)-2)
	}
	h.write(t, "on", 2)
	h.d.tick(ctx)
	got := h.settle(t, 4)
	if len(got) != 4 {
		t.Fatalf("flag on again: %d sent, want 4", len(got))
	}
	for _, g := range got[2:] {
		if id := g.body.Data.EntityID; id != "on-0" && id != "on-1" {
			t.Errorf("delivered %s; only on-0 and on-1 were written with the flag on", id)
		}
	}

	// The flag is read after the events: an event committed after the
	// flag went off, while the last "on" answer was on its way, is not in
	// the page that answer decides (the page was read before), and the
	// next page meets the new epoch.
	h.write(t, "edge", 1) // a page for the next tick, so that it asks
	auth.mu.Lock()
	// Another tenant change moved the epoch and was answered: the next
	// check asks again.
	auth.epoch++
	auth.now = auth.now.Add(auth.window)
	auth.during = func() {
		auth.set(false)
		h.write(t, "late", 1)
	}
	auth.mu.Unlock()
	h.d.tick(ctx)
	h.d.tick(ctx)
	got = h.settle(t, 5)
	for _, g := range got {
		if g.body.Data.EntityID == "late-0" {
			t.Errorf("an event committed after the flag went off was delivered")
		}
	}
	if len(got) != 5 {
		t.Errorf("%d sent, want 5 (the edge event read with the flag on, not the late one)", len(got))
	}
}

// TestDispatcherFlagOffBehindTheHorizon: an event committed while the flag
// was off is never delivered, even when the dispatcher first reads it
// after the flag is on again, because a transaction elsewhere held the
// audit horizon back for the whole off period (the dispatcher reads only
// below the oldest running transaction). The event occurred before the
// tenant last began to fire (Firing.Since), so it is passed over.
func TestDispatcherFlagOffBehindTheHorizon(t *testing.T) {
	t.Parallel()
	auth := &fakeAuth{on: true, epoch: 1, now: time.Now(), window: time.Hour}
	h := newHarness(t, Config{Features: auth.lookup, Epoch: auth.readEpoch})
	h.s.features.now = auth.clock
	ep := h.endpoint(t, "contact.created")
	ctx := context.Background()

	held, err := h.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx) //nolint:errcheck // rolled back below; this covers a failed test
	if _, err := held.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	auth.set(false)
	off := h.record(t, ctx, "off", 2) // below the held transaction's horizon: not readable yet
	h.d.tick(ctx)
	if n := h.queued(t, ep); n != 0 {
		t.Fatalf("flag off: %d queued", n)
	}

	auth.set(true)
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	h.waitVisible(t, off)
	h.write(t, "on", 1)
	h.d.tick(ctx)
	h.d.tick(ctx)
	got := h.settle(t, 1)
	if len(got) != 1 || got[0].body.Data.EntityID != "on-0" {
		ids := make([]string, len(got))
		for i, g := range got {
			ids[i] = g.body.Data.EntityID
		}
		t.Fatalf("after the flag came back on: delivered %v; want only on-0 (the off-period events were read only now, and must stay undelivered)", ids)
	}
}

// TestDispatcherEnqueueInChunks checks that a limit above one commit's
// worth (enqueueChunk) still queues exactly the limit in one enqueue step.
func TestDispatcherEnqueueInChunks(t *testing.T) {
	t.Parallel()
	limit := enqueueChunk + enqueueChunk/2
	h := newHarness(t, Config{EnqueueLimit: limit})
	ep := h.endpoint(t, "contact.created")
	h.write(t, "c", 2*enqueueChunk)
	ctx := context.Background()
	h.d.enqueue(ctx)
	if got := h.queued(t, ep); got != limit {
		t.Fatalf("after one enqueue: %d queued, want %d", got, limit)
	}
	h.d.enqueue(ctx)
	if got := h.queued(t, ep); got != 2*enqueueChunk {
		t.Fatalf("after two: %d queued, want %d", got, 2*enqueueChunk)
	}
}

// waitReceived waits until the receiver has got n requests.
func (h *harness) waitReceived(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		h.mu.Lock()
		got := len(h.got)
		h.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// release lets every held request through.
func (h *harness) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		select {
		case <-h.gate:
		default:
			close(h.gate)
		}
	}
}

// TestDispatcherStopFinishesSends: a stopping dispatcher waits for the sends
// it has in flight and records them before Stop returns (graceful
// shutdown), so a receiver's 2xx is never re-sent after a clean stop.
func TestDispatcherStopFinishesSends(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, Config{Dispatch: true, Tick: 5 * time.Millisecond}, true)
	h.mu.Lock()
	h.gate = make(chan struct{})
	h.mu.Unlock()
	h.endpoint(t, "contact.created")
	h.write(t, "c", 3)
	h.waitReceived(t, 3)
	stopped := make(chan error, 1)
	go func() { stopped <- h.s.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while three sends were in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	h.release()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return after the sends finished")
	}
	// Recorded before Stop returned: no waiting here.
	var ok int
	if err := h.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM webhooks.attempts WHERE tenant_id = $1 AND success`, h.tenant).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	if ok != 3 {
		t.Errorf("%d successful attempts recorded when Stop returned, want 3", ok)
	}
}
