package orders

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/services/orders/recurring"
)

var (
	spansOnce sync.Once
	spans     *tracetest.SpanRecorder
)

// recordSpans installs a global tracer provider that keeps every span, once
// per test binary, as a process does (telemetry.Setup with a span
// processor: spans are recorded, so pools opened afterwards trace their
// queries). Once only: the runner's tracer (a package variable) follows
// the first provider installed and no later one, so a second provider (a
// second run of the test, -count=2) never saw its spans.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	spansOnce.Do(func() {
		spans = tracetest.NewSpanRecorder()
		if _, err := telemetry.Setup(context.Background(), "orders-test", spans); err != nil {
			t.Fatal(err)
		}
	})
	return spans
}

// TestRunnerTrace: a run is one trace; each due schedule gets a
// "recurring.charge" span under "recurring.run", its PostgreSQL queries
// are children of that charge, and the installment order's audit row
// carries the charge span, so the webhook deliveries it causes join the
// same trace. Not parallel: it installs the global tracer provider.
func TestRunnerTrace(t *testing.T) {
	rec := recordSpans(t)

	ctx := context.Background()
	pool := testPool(t)
	tenant, fund := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date,
			fund_id, payment_method, status, next_charge_date, origin_order_id)
		SELECT $1, gen_random_uuid(), g, 1000, 'USD', 'monthly', DATE '2026-01-31', $2, 'Cash', 'active', DATE '2026-01-31', gen_random_uuid()
		FROM generate_series(1, 3) g`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 31, 12, 0, 0, 0, time.UTC)
	n, err := New(pool, Config{Now: func() time.Time { return now }}, nil).NewRunner(recurring.RunnerConfig{}).RunOnce(ctx)
	if err != nil || n != 3 {
		t.Fatalf("RunOnce = %d, %v; want 3", n, err)
	}

	// This run's span: the parent of the charges of this test's tenant
	// (the recorder holds every run of the test binary).
	var run sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "recurring.charge" {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == "almoner.tenant_id" && a.Value.AsString() == tenant.String() {
				for _, p := range rec.Ended() {
					if p.Name() == "recurring.run" && p.SpanContext().SpanID() == s.Parent().SpanID() {
						run = p
					}
				}
			}
		}
	}
	if run == nil {
		t.Fatal("no recurring.run span")
	}
	traceID := run.SpanContext().TraceID()
	charges := map[string]bool{} // span id → has a PostgreSQL child
	for _, s := range rec.Ended() {
		if s.Name() == "recurring.charge" && s.Parent().SpanID() == run.SpanContext().SpanID() {
			charges[s.SpanContext().SpanID().String()] = false
		}
	}
	if len(charges) != 3 {
		t.Fatalf("%d recurring.charge spans under the run, want 3", len(charges))
	}
	for _, s := range rec.Ended() {
		if _, ok := charges[s.Parent().SpanID().String()]; ok && s.SpanContext().TraceID() == traceID &&
			s.InstrumentationScope().Name != "" && s.Name() != "recurring.charge" {
			charges[s.Parent().SpanID().String()] = true
		}
	}
	for id, hasDB := range charges {
		if !hasDB {
			t.Errorf("charge span %s has no PostgreSQL child span", id)
		}
	}

	// The installment orders' audit rows point into the charge spans. The
	// reader returns rows only below the oldest transaction running
	// anywhere on the server, and the package's other tests share it, so
	// committed rows may take a moment to become readable.
	var page audit.Page
	for deadline := time.Now().Add(30 * time.Second); ; {
		page, err = audit.Read(ctx, pool, audit.ReadQuery{TenantID: tenant.String(), Events: []string{"order.created"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(page.Events) != 3 {
		t.Fatalf("%d order.created rows, want 3", len(page.Events))
	}
	for _, e := range page.Events {
		sc, ok := audit.SpanContext(e.TraceParent)
		if !ok || sc.TraceID() != traceID {
			t.Errorf("order %s audit traceparent %q is not in the run's trace %s", e.EntityID, e.TraceParent, traceID)
			continue
		}
		if _, ok := charges[sc.SpanID().String()]; !ok {
			t.Errorf("order %s audit row points at span %s, not a charge span", e.EntityID, sc.SpanID())
		}
	}
}
