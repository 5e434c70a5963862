package audit

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
)

func TestSpanContextParse(t *testing.T) {
	tests := []struct {
		in      string
		ok      bool
		sampled bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true, false},
		{"", false, false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, false}, // unknown version
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false, false}, // zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false, false}, // zero span id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", false, false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", false, false},
		{"00-xyz-00f067aa0ba902b7-01", false, false},
	}
	for _, tt := range tests {
		sc, ok := SpanContext(tt.in)
		if ok != tt.ok {
			t.Errorf("SpanContext(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if ok && (sc.IsSampled() != tt.sampled || !sc.IsRemote()) {
			t.Errorf("SpanContext(%q) sampled=%v remote=%v", tt.in, sc.IsSampled(), sc.IsRemote())
		}
	}
}

func FuzzSpanContext(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("00--  -01")
	f.Fuzz(func(t *testing.T, s string) {
		sc, ok := SpanContext(s)
		if !ok {
			return
		}
		// Whatever parses renders back to the same header.
		got := TraceParent(trace.ContextWithSpanContext(context.Background(), sc))
		if got == nil || *got != s {
			t.Fatalf("round trip of %q gave %v", s, got)
		}
	})
}

// TestRecordKeepsTraceParent: the writer's span context is stored with
// the row and handed back by the reader, and a writer without one leaves
// it empty.
func TestRecordKeepsTraceParent(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := SpanContext(tp)
	if !ok {
		t.Fatal("fixture traceparent does not parse")
	}
	tx := begin(t, pool)
	record(t, trace.ContextWithSpanContext(ctx, sc), tx, tenant, "traced")
	record(t, ctx, tx, tenant, "untraced")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	events, _ := readWant(t, pool, ReadQuery{TenantID: tenant}, 2)
	got := map[string]string{}
	for _, e := range events {
		got[e.EntityID] = e.TraceParent
	}
	if got["traced"] != tp || got["untraced"] != "" {
		t.Fatalf("trace parents = %v", got)
	}
}
