// Package telemetry sets up what every Almoner process reports: OpenTelemetry
// traces (exported over OTLP only when OTEL_EXPORTER_OTLP_ENDPOINT is set),
// Prometheus metrics, and logs that carry the trace id.
//
// Traces exist even without an exporter: the trace id of each request is the
// `traceId` of its problem documents and the `trace_id` of its log lines, and
// it crosses the gateway → service hop in W3C traceparent metadata.
package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/almoner/almoner/pkg/traceid"
)

// Setup installs the global tracer provider and propagator for a process
// named service. Extra span processors (tests use an in-memory exporter)
// are added to it. The returned function flushes and stops exporting.
func Setup(ctx context.Context, service string, extra ...sdktrace.SpanProcessor) (func(context.Context) error, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	exporting := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch {
	case !exporting && len(extra) == 0:
		// Nobody would read a recorded span: keep the ids (problem
		// documents and logs quote them) and record nothing, which takes
		// span bookkeeping off every request's hot path.
		opts = append(opts, sdktrace.WithSampler(idsOnly{}))
	case os.Getenv("OTEL_TRACES_SAMPLER") != "":
		// The SDK reads OTEL_TRACES_SAMPLER(_ARG) itself when no sampler
		// is given.
	default:
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	}
	if exporting {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	for _, p := range extra {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	recording.Store(exporting || len(extra) > 0)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, nil
}

// idsOnly gives every span a trace and span id but records none of them.
type idsOnly struct{}

func (idsOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.Drop}
}

func (idsOnly) Description() string { return "IdsOnly" }

// GRPCServerHandler traces gRPC server calls and continues the caller's
// trace from its metadata (otelgrpc). Servers take GRPCServerOptions,
// which use it when spans are recorded.
func GRPCServerHandler() stats.Handler { return otelgrpc.NewServerHandler() }

// GRPCClientOption traces outgoing gRPC calls and propagates the trace
// (otelgrpc). Clients take GRPCClientOptions, which use it when spans are
// recorded.
func GRPCClientOption() grpc.DialOption { return grpc.WithStatsHandler(otelgrpc.NewClientHandler()) }

// TracePool makes every query of pools built from cfg a child span of the
// calling request, when spans are recorded (Recording): a query span
// nobody records carries no id anyone quotes.
func TracePool(cfg *pgxpool.Config) {
	TraceConn(cfg.ConnConfig)
}

// TraceConn is TracePool for a single connection's config.
func TraceConn(cfg *pgx.ConnConfig) {
	if Recording() {
		cfg.Tracer = otelpgx.NewTracer()
	}
}

// MetricsHandler serves the default Prometheus registry.
func MetricsHandler() http.Handler {
	return promhttp.HandlerFor(prometheus.DefaultGatherer, promhttp.HandlerOpts{})
}

// Register adds collectors to the default registry, tolerating ones that
// are already there (several services in one process share metrics).
func Register(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := prometheus.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}

func init() {
	// The default registry already has Go and process collectors; make
	// sure build info is there too.
	Register(collectors.NewBuildInfoCollector())
}

// LogHandler wraps h so that every record logged with a context carries
// the request's trace id (the span's, or the one the gateway forwarded).
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := traceid.FromIncoming(ctx); id != "" {
		r.AddAttrs(slog.String("trace_id", id))
	}
	return t.Handler.Handle(ctx, r)
}

func (t traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{t.Handler.WithAttrs(as)}
}

func (t traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{t.Handler.WithGroup(name)}
}
