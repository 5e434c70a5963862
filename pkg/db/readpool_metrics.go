package db

import "github.com/prometheus/client_golang/prometheus"

// Collector returns a collector of the reads each side served and the
// standby's lag at the last check, labelled pool=name: the standby's
// share of the lagging reads is
// almoner_db_lagging_reads_total{server="standby"} over the sum.
func (r *ReadPool) Collector(name string) prometheus.Collector {
	l := prometheus.Labels{"pool": name}
	return &readCollector{
		r:     r,
		reads: prometheus.NewDesc("almoner_db_lagging_reads_total", "Reads that may lag, by the server that served them (standby, primary).", []string{"server"}, l),
		lag:   prometheus.NewDesc("almoner_db_standby_lag_seconds", "The read replica's replay lag at the last check.", nil, l),
	}
}

type readCollector struct {
	r          *ReadPool
	reads, lag *prometheus.Desc
}

func (c *readCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reads
	ch <- c.lag
}

func (c *readCollector) Collect(ch chan<- prometheus.Metric) {
	standby, primary := c.r.Counts()
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(standby), "standby")
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(primary), "primary")
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, c.r.Lag().Seconds())
}
