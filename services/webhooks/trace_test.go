package webhooks

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var (
	spansOnce sync.Once
	spans     *tracetest.SpanRecorder
)

// recordSpans installs a global tracer provider that keeps every span, once
// per test binary (the dispatcher's tracer follows the global provider).
func recordSpans() *tracetest.SpanRecorder {
	spansOnce.Do(func() {
		spans = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	})
	return spans
}

// deliverSpans returns the ended webhook.deliver spans of one trace.
func deliverSpans(tid trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "webhook.deliver" && s.SpanContext().TraceID() == tid {
			out = append(out, s)
		}
	}
	return out
}

// TestDeliverySpanJoinsTheWritersTrace checks that each attempt is a
// webhook.deliver span in the trace of the request that wrote the event,
// a child of that request's span, with the attempt's facts, and that the
// POST to the receiver carries no trace context.
func TestDeliverySpanJoinsTheWritersTrace(t *testing.T) {
	t.Parallel()
	recordSpans()
	h := newHarness(t, Config{})
	ep := h.endpoint(t, "contact.created")
	ctx := context.Background()

	// A trace of its own each run: the recorder is the test binary's, and
	// under -count=N the earlier runs' spans are still in it.
	var writer trace.TraceID
	if _, err := rand.Read(writer[:]); err != nil {
		t.Fatal(err)
	}
	parent, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	wctx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: writer, SpanID: parent, TraceFlags: trace.FlagsSampled}))
	h.writeCtx(t, wctx, "traced", 1)

	// A failed first attempt, then a successful second.
	h.status.Store(http.StatusServiceUnavailable)
	h.d.tick(ctx)
	h.settle(t, 1)
	h.status.Store(0)
	if _, err := h.pool.Exec(ctx, `UPDATE webhooks.deliveries SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	h.d.tick(ctx)
	got := h.settle(t, 2)
	for _, g := range got {
		for _, k := range []string{"Traceparent", "Tracestate", "Baggage"} {
			if v := g.header.Get(k); v != "" {
				t.Errorf("the receiver got %s: %s", k, v)
			}
		}
	}

	ss := deliverSpans(writer)
	if len(ss) != 2 {
		t.Fatalf("%d webhook.deliver spans in the writer's trace, want 2", len(ss))
	}
	for i, s := range ss {
		if s.Parent().SpanID() != parent || !s.Parent().IsRemote() {
			t.Errorf("attempt %d: parent %v, want the writer's span %s", i+1, s.Parent(), parent)
		}
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("attempt %d: kind %v", i+1, s.SpanKind())
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes() {
			attrs[a.Key] = a.Value
		}
		wantStatus, wantOK := int64(http.StatusServiceUnavailable), false
		if i == 1 {
			wantStatus, wantOK = http.StatusNoContent, true
		}
		if attrs["webhook.event"].AsString() != "contact.created" || attrs["webhook.endpoint_id"].AsString() != ep.String() ||
			attrs["webhook.attempt"].AsInt64() != int64(i+1) || attrs["http.response.status_code"].AsInt64() != wantStatus ||
			attrs["webhook.success"].AsBool() != wantOK {
			t.Errorf("attempt %d: attributes %v", i+1, s.Attributes())
		}
		if wantOK && s.Status().Code != codes.Unset || !wantOK && (s.Status().Code != codes.Error || s.Status().Description != "HTTP 503") {
			t.Errorf("attempt %d: status %v", i+1, s.Status())
		}
	}
}

// TestDeliveryOfUntracedEvent checks that an event written outside any
// trace is still delivered, its attempt a span of a trace of its own.
func TestDeliveryOfUntracedEvent(t *testing.T) {
	t.Parallel()
	recordSpans()
	h := newHarness(t, Config{})
	h.endpoint(t, "contact.created")
	h.write(t, "plain", 1)
	h.d.tick(context.Background())
	if got := h.settle(t, 1); len(got) != 1 {
		t.Fatalf("%d sent, want 1", len(got))
	}
	var traceParent *string
	if err := h.pool.QueryRow(context.Background(), `SELECT trace_parent FROM webhooks.deliveries`).Scan(&traceParent); err != nil || traceParent != nil {
		t.Errorf("trace_parent = %v, %v; want NULL", traceParent, err)
	}
}
