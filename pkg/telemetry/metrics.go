package telemetry

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
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

// UnaryServerMetrics records every unary call's code and latency.
func UnaryServerMetrics() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		svc, m := splitMethod(info.FullMethod)
		grpcHandled.WithLabelValues(svc, m, status.Code(err).String()).Inc()
		grpcDuration.WithLabelValues(svc, m).Observe(time.Since(start).Seconds())
		return resp, err
	}
}

// StreamServerMetrics records every streaming call's code and duration.
func StreamServerMetrics() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		svc, m := splitMethod(info.FullMethod)
		grpcHandled.WithLabelValues(svc, m, status.Code(err).String()).Inc()
		grpcDuration.WithLabelValues(svc, m).Observe(time.Since(start).Seconds())
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
