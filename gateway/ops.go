package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/almoner/almoner/gateway/console"
	"github.com/almoner/almoner/pkg/telemetry"
)

// opsHandler serves the probes' endpoints (/healthz, /readyz) ahead of the
// API, without authentication: they carry no tenant data. /metrics is not
// among them: platform-wide volumes and the build are for operators, so
// every process serves them on its own listener (ALMONER_METRICS_ADDR),
// and on this port /metrics is an unknown path like any other.
// Everything else goes to next.
func (g *Gateway) opsHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			// Alive: the process serves HTTP. Dependencies are /readyz's.
			writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
		case "/readyz":
			g.ready(w, r)
		default:
			if console.Owns(r.URL.Path) {
				g.console.ServeHTTP(w, r)
				return
			}
			if !g.docsHandler(w, r) {
				next.ServeHTTP(w, r)
			}
		}
	})
}

// ready answers 200 only when every upstream service reports SERVING on
// grpc.health.v1 (each service reports NOT_SERVING while its database is
// unreachable), so a gateway is taken out of rotation when it could not
// serve.
func (g *Gateway) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var mu sync.Mutex
	checks := map[string]string{}
	var wg sync.WaitGroup
	for name, conn := range g.conns {
		wg.Go(func() {
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: name})
			st := "UNREACHABLE"
			if err == nil {
				st = resp.GetStatus().String()
			}
			mu.Lock()
			checks[name] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	code := http.StatusOK
	for _, st := range checks {
		if st != healthpb.HealthCheckResponse_SERVING.String() {
			code = http.StatusServiceUnavailable
		}
	}
	status := "ready"
	if code != http.StatusOK {
		status = "not ready"
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": checks})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

type routeKey struct{}

// routeHolder is filled in by the mux once it has matched a route, so the
// outer middleware can label metrics and the span with the route template
// (not the raw path, which would make one series per tenant).
type routeHolder struct{ route string }

// observe records the request's span name, metrics and status. Every
// label comes from a fixed set, whatever the client sends: the method
// (methodLabel), the route template or one of a few fixed names, and the
// status the gateway chose. A label taken from the request itself would
// let anyone add series, which the registry keeps for the life of the
// process.
func (g *Gateway) observe(next http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := &routeHolder{route: "unmatched"}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), routeKey{}, h)))
		route := h.route
		if route == "unmatched" {
			switch r.URL.Path {
			case "/healthz", "/readyz":
				route = r.URL.Path
			}
		}
		method := methodLabel(r.Method)
		trace.SpanFromContext(r.Context()).SetName(method + " " + route)
		telemetry.ObserveHTTP(route, method, sw.status, time.Since(start))
	})
	if !telemetry.Recording() {
		// Nobody records the spans: start the request's span and carry
		// its ids, and nothing else (pkg/telemetry, light.go).
		return telemetry.HTTPHandler(inner, func(r *http.Request) string { return methodLabel(r.Method) })
	}
	return otelhttp.NewHandler(inner, "gateway",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return methodLabel(r.Method) }),
		// otelhttp's own metrics would be labelled with the client's Host
		// header (server.address), another value anyone can vary; the
		// Prometheus metrics above are the gateway's. Explicitly no-op, so
		// that a global meter provider set later cannot turn them on.
		otelhttp.WithMeterProvider(noop.NewMeterProvider()))
}

// methodLabel names a request method for metrics and span names: the
// methods of RFC 9110 and PATCH by name, anything else (any token a client
// makes up, of any length) as OTHER.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// noteRoute records the matched route template for observe.
func noteRoute(ctx context.Context, r *http.Request) {
	if h, ok := r.Context().Value(routeKey{}).(*routeHolder); ok {
		if p, ok := runtime.HTTPPathPattern(ctx); ok {
			h.route = p
		}
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
