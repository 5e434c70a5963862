package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSetupSampling: without an exporter or a span processor, spans carry
// ids that cross a hop but are not recorded; with a processor they are.
func TestSetupSampling(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	tests := []struct {
		name      string
		extra     []sdktrace.SpanProcessor
		recording bool
	}{
		{"no exporter, no processor", nil, false},
		{"test processor", []sdktrace.SpanProcessor{tracetest.NewSpanRecorder()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shutdown, err := Setup(context.Background(), "test", tt.extra...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = shutdown(context.Background()) }()
			ctx, span := otel.Tracer("t").Start(context.Background(), "outer")
			defer span.End()
			sc := span.SpanContext()
			if !sc.IsValid() {
				t.Fatal("span has no trace id")
			}
			if span.IsRecording() != tt.recording {
				t.Errorf("recording = %v, want %v", span.IsRecording(), tt.recording)
			}
			// The id crosses a hop in W3C traceparent and the next span
			// continues the same trace.
			carrier := propagation.MapCarrier{}
			otel.GetTextMapPropagator().Inject(ctx, carrier)
			remote := otel.GetTextMapPropagator().Extract(context.Background(), carrier)
			_, child := otel.Tracer("t").Start(remote, "inner")
			defer child.End()
			if child.SpanContext().TraceID() != sc.TraceID() {
				t.Errorf("child trace %s, want %s", child.SpanContext().TraceID(), sc.TraceID())
			}
		})
	}
}
