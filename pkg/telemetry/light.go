package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Spans without a reader. When Setup installs the ids-only sampler (no
// exporter, no extra span processor), every span is dropped as soon as it
// starts: what a request needs of tracing is its ids — the trace id its
// problem documents and log lines quote, which crosses every hop in
// traceparent, and the span context audit rows and events keep. The
// OpenTelemetry instrumentations (otelhttp, otelgrpc, otelpgx) still did
// everything else for spans nobody records: attributes, wrapped response
// writers and bodies, metrics for a no-op meter, and for every gRPC call
// two full copies of its metadata (gRPC copies the incoming metadata for
// any stats handler). Measured on GET api-keys, ≈ 100 of the ≈ 690
// allocations of a request and ≈ 7 % of the process's CPU.
//
// Then the light equivalents below start the same spans (a server span
// per HTTP request and per gRPC call, continuing the caller's trace from
// traceparent) and propagate the same context, and nothing else; pgx
// queries get no span. When spans are recorded, the instrumentations run
// as before. The choice is made when servers, clients and pools are
// built, from what Setup installed: a provider installed otherwise (a
// test's otel.SetTracerProvider) gets the light spans, so a test that
// wants the instrumentations' spans installs its recorder with Setup.

// recording is whether Setup installed a tracer provider whose spans
// someone reads (an exporter, or an extra span processor).
var recording atomic.Bool

// Recording reports whether the spans of this process are recorded: then
// the full OpenTelemetry instrumentations run; otherwise the light ones
// (light.go), which carry the same ids.
func Recording() bool { return recording.Load() }

// tracer starts the light spans, through the global provider.
var tracer = otel.Tracer("github.com/almoner/almoner/pkg/telemetry")

// GRPCServerOptions trace gRPC server calls and continue the caller's
// trace from its metadata: otelgrpc's handler when spans are recorded,
// else a server span started by an interceptor (put these options first,
// so that it is the outermost).
func GRPCServerOptions() []grpc.ServerOption {
	if Recording() {
		return []grpc.ServerOption{grpc.StatsHandler(GRPCServerHandler())}
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, span := startServerSpan(ctx, info.FullMethod)
			defer span.End()
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx, span := startServerSpan(ss.Context(), info.FullMethod)
			defer span.End()
			return handler(srv, tracedStream{ServerStream: ss, ctx: ctx})
		}),
	}
}

// startServerSpan starts a call's server span, a child of the caller's
// span when the metadata carries one, named as otelgrpc names it.
func startServerSpan(ctx context.Context, method string) (context.Context, trace.Span) {
	ctx = otel.GetTextMapPropagator().Extract(ctx, incomingCarrier{ctx})
	return tracer.Start(ctx, strings.TrimPrefix(method, "/"), trace.WithSpanKind(trace.SpanKindServer))
}

type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s tracedStream) Context() context.Context { return s.ctx }

// GRPCClientOptions trace outgoing gRPC calls and propagate the trace:
// otelgrpc's handler when spans are recorded, else an interceptor that
// puts the caller's span context in the call's metadata.
func GRPCClientOptions() []grpc.DialOption {
	if Recording() {
		return []grpc.DialOption{GRPCClientOption()}
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(inject(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(inject(ctx), desc, cc, method, opts...)
		}),
	}
}

// inject adds the propagator's fields for ctx's span (traceparent) to the
// outgoing metadata, appended rather than copied.
func inject(ctx context.Context) context.Context {
	c := outgoingCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, &c)
	if len(c) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, c...)
}

// HTTPHandler starts the server span of each request, continuing the
// client's trace from its traceparent header, named by name: the light
// counterpart of otelhttp.NewHandler for a process whose spans are not
// recorded (callers use otelhttp when Recording).
func HTTPHandler(next http.Handler, name func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, name(r), trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// incomingCarrier reads the propagator's fields from a call's incoming
// metadata key by key, without copying all of it.
type incomingCarrier struct{ ctx context.Context }

func (c incomingCarrier) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (incomingCarrier) Set(string, string) {}

func (c incomingCarrier) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}

// outgoingCarrier collects the propagator's fields as metadata pairs.
type outgoingCarrier []string

func (c *outgoingCarrier) Get(string) string { return "" }

func (c *outgoingCarrier) Set(key, value string) { *c = append(*c, strings.ToLower(key), value) }

func (c *outgoingCarrier) Keys() []string {
	keys := make([]string, 0, len(*c)/2)
	for i := 0; i < len(*c); i += 2 {
		keys = append(keys, (*c)[i])
	}
	return keys
}
