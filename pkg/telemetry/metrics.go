package telemetry

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// HTTPRequests counts REST requests by route template, method and status.
	HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "almoner_http_requests_total",
		Help: "REST requests by route template, method and status code.",
	}, []string{"route", "method", "status"})
	// HTTPDuration is the latency of REST requests by route template.
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "almoner_http_request_duration_seconds",
		Help:    "REST request latency by route template and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"route", "method"})
	grpcHandled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "almoner_grpc_server_handled_total",
		Help: "gRPC calls completed by the server, by service, method and code.",
	}, []string{"grpc_service", "grpc_method", "grpc_code"})
	grpcDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "almoner_grpc_server_handling_seconds",
		Help:    "gRPC server call latency by service and method.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	}, []string{"grpc_service", "grpc_method"})
)

func init() {
	Register(HTTPRequests, HTTPDuration, grpcHandled, grpcDuration)
}

func splitMethod(full string) (string, string) {
	full = strings.TrimPrefix(full, "/")
	svc, m, _ := strings.Cut(full, "/")
	return svc, m
}

// series caches the children of metric vectors by their label values:
// WithLabelValues hashes and checks every value on every call, and a
// request records two series at the gateway and two at the service. The
// values come from fixed sets (route templates, method names, status
// codes, RPC names), so the cache holds no more entries than the
// registry holds series.
type series[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// get returns the entry of k, made by mk the first time.
func (s *series[K, V]) get(k K, mk func() V) V {
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return v
	}
	v = mk()
	s.mu.Lock()
	if s.m == nil {
		s.m = map[K]V{}
	}
	s.m[k] = v
	s.mu.Unlock()
	return v
}

type httpKey struct {
	route, method string
	status        int
}

type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

var httpCache series[httpKey, httpSeries]

// ObserveHTTP counts a REST request by route template, method and status
// and records its duration (HTTPRequests, HTTPDuration). Every value must
// come from a fixed set (docs/gateway.md, "Metrics"), as the registry
// keeps each series it sees.
func ObserveHTTP(route, method string, status int, d time.Duration) {
	s := httpCache.get(httpKey{route, method, status}, func() httpSeries {
		return httpSeries{HTTPRequests.WithLabelValues(route, method, strconv.Itoa(status)), HTTPDuration.WithLabelValues(route, method)}
	})
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}

type grpcKey struct {
	method string
	code   codes.Code
}

type grpcSeries struct {
	handled  prometheus.Counter
	duration prometheus.Observer
}

var grpcCache series[grpcKey, grpcSeries]

// observeGRPC records a call of the full method name that ended with code.
func observeGRPC(method string, code codes.Code, d time.Duration) {
	s := grpcCache.get(grpcKey{method, code}, func() grpcSeries {
		svc, m := splitMethod(method)
		return grpcSeries{grpcHandled.WithLabelValues(svc, m, code.String()), grpcDuration.WithLabelValues(svc, m)}
	})
	s.handled.Inc()
	s.duration.Observe(d.Seconds())
}

// UnaryServerMetrics records every unary call's code and latency.
func UnaryServerMetrics() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		observeGRPC(info.FullMethod, status.Code(err), time.Since(start))
		return resp, err
	}
}

// StreamServerMetrics records every streaming call's code and duration.
func StreamServerMetrics() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		observeGRPC(info.FullMethod, status.Code(err), time.Since(start))
		return err
	}
}

// poolCollector exports pgxpool statistics.
type poolCollector struct {
	pool                                                 *pgxpool.Pool
	total, idle, acquired, max, acquires, waits, waitDur *prometheus.Desc
}

// PoolCollector returns a collector of pool's statistics, labelled with
// the process's name for the pool.
func PoolCollector(name string, pool *pgxpool.Pool) prometheus.Collector {
	l := prometheus.Labels{"pool": name}
	d := func(n, help string) *prometheus.Desc { return prometheus.NewDesc(n, help, nil, l) }
	return &poolCollector{
		pool:     pool,
		total:    d("almoner_db_pool_connections", "Open PostgreSQL connections."),
		idle:     d("almoner_db_pool_idle_connections", "Idle PostgreSQL connections."),
		acquired: d("almoner_db_pool_acquired_connections", "PostgreSQL connections in use."),
		max:      d("almoner_db_pool_max_connections", "Pool size limit."),
		acquires: d("almoner_db_pool_acquires_total", "Connections handed out."),
		waits:    d("almoner_db_pool_empty_acquires_total", "Acquires that had to wait for a connection."),
		waitDur:  d("almoner_db_pool_acquire_wait_seconds_total", "Time spent waiting for a connection."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.idle, c.acquired, c.max, c.acquires, c.waits, c.waitDur} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.waitDur, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
