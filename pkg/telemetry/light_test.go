package telemetry

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// seen is the span context a health check's handler ran with, and its
// x-other metadata.
type seen struct {
	healthpb.UnimplementedHealthServer
	sc    chan trace.SpanContext
	other chan []string
}

func (s seen) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.other <- metadata.ValueFromIncomingContext(ctx, "x-other")
	s.sc <- trace.SpanContextFromContext(ctx)
	return &healthpb.HealthCheckResponse{}, nil
}

func (s seen) Watch(_ *healthpb.HealthCheckRequest, ss grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	s.sc <- trace.SpanContextFromContext(ss.Context())
	return nil
}

// TestLightTracingCarriesTheIds: with spans not recorded (no exporter, no
// processor), the light gRPC interceptors and HTTP handler give every
// call and request a span of the caller's trace, or a new trace, as the
// OpenTelemetry instrumentations do.
func TestLightTracingCarriesTheIds(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	shutdown, err := Setup(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	if Recording() {
		t.Fatal("recording without an exporter or a processor")
	}

	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(GRPCServerOptions()...)
	s := seen{sc: make(chan trace.SpanContext, 1), other: make(chan []string, 1)}
	healthpb.RegisterHealthServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, GRPCClientOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	client := healthpb.NewHealthClient(cc)

	ctx, span := otel.Tracer("t").Start(context.Background(), "caller")
	defer span.End()
	caller := span.SpanContext()
	// Metadata the caller set travels with the trace's.
	ctx = metadata.AppendToOutgoingContext(ctx, "x-other", "kept")
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := <-s.other; len(got) != 1 || got[0] != "kept" {
		t.Errorf("the caller's own metadata: %v", got)
	}
	if got := <-s.sc; got.TraceID() != caller.TraceID() || got.SpanID() == caller.SpanID() || !got.IsValid() {
		t.Errorf("unary: the server's span %v/%v, want a new span of trace %v", got.TraceID(), got.SpanID(), caller.TraceID())
	}
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = stream.Recv()
	if got := <-s.sc; got.TraceID() != caller.TraceID() {
		t.Errorf("stream: the server's trace %v, want %v", got.TraceID(), caller.TraceID())
	}
	if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	<-s.other
	if got := <-s.sc; !got.IsValid() || got.TraceID() == caller.TraceID() {
		t.Errorf("without a caller's span: %v, want a new trace", got.TraceID())
	}

	var inHandler trace.SpanContext
	h := HTTPHandler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		inHandler = trace.SpanContextFromContext(r.Context())
	}), func(r *http.Request) string { return r.Method })
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if inHandler.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || inHandler.SpanID().String() == "00f067aa0ba902b7" {
		t.Errorf("HTTP with traceparent: %v/%v", inHandler.TraceID(), inHandler.SpanID())
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil))
	if !inHandler.IsValid() || inHandler.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("HTTP without traceparent: %v, want a new trace", inHandler.TraceID())
	}
}

// TestRecordingChoosesTheInstrumentations: with a span processor the
// full instrumentations (otelgrpc's stats handlers) are the ones used.
func TestRecordingChoosesTheInstrumentations(t *testing.T) {
	prev := otel.GetTracerProvider()
	t.Cleanup(func() { otel.SetTracerProvider(prev); recording.Store(false) })
	shutdown, err := Setup(context.Background(), "test", tracetest.NewSpanRecorder())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	if !Recording() || len(GRPCServerOptions()) != 1 || len(GRPCClientOptions()) != 1 {
		t.Errorf("recording %v: %d server and %d client options, want otelgrpc's one each", Recording(), len(GRPCServerOptions()), len(GRPCClientOptions()))
	}
}
