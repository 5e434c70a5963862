package webhooks

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/telemetry"
)

// The dispatcher's metrics; package-level because several services (and
// test clusters) in one process share the default registry.
var (
	metricPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "almoner_webhook_pending_deliveries",
		Help: "Webhook deliveries waiting for an attempt (as last counted by a dispatcher).",
	})
	metricAttempts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "almoner_webhook_attempts_total",
		Help: "Webhook delivery attempts made.",
	})
	metricFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "almoner_webhook_failures_total",
		Help: "Webhook delivery attempts that failed (non-2xx, network error or timeout).",
	})
	metricAbandoned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "almoner_webhook_abandoned_total",
		Help: "Webhook deliveries abandoned after their last failed attempt.",
	})
	metricLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "almoner_webhook_delivery_lag_seconds",
		Help:    "Time from the audit event (its transaction's time) to the first delivery attempt.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	})
	metricPruned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "almoner_webhook_pruned_total",
		Help: "Rows the dispatcher deleted past ALMONER_WEBHOOK_DELIVERY_RETENTION, by kind: deliveries, attempts (theirs), test_attempts, orphans (pending deliveries of deleted endpoints).",
	}, []string{"kind"})
)

func init() {
	telemetry.Register(metricPending, metricAttempts, metricFailures, metricAbandoned, metricLag, metricPruned)
}
