package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reads are the lagging reads one pool served, by server.
type reads struct {
	standby, primary float64
}

// share is the standby's part of the reads, 0 when there were none.
func (r reads) share() float64 {
	if r.standby+r.primary == 0 {
		return 0
	}
	return r.standby / (r.standby + r.primary)
}

// sub is r minus an earlier sample of the same counters.
func (r reads) sub(before reads) reads {
	return reads{standby: r.standby - before.standby, primary: r.primary - before.primary}
}

// sample is one scrape: the lagging reads and the standby lag each read
// pool (label pool: one per service) reported.
type sample struct {
	reads map[string]reads
	lag   map[string]float64
}

// parseSample reads almoner_db_lagging_reads_total and
// almoner_db_standby_lag_seconds out of a Prometheus text exposition.
func parseSample(r io.Reader) (sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return sample{}, fmt.Errorf("parse metrics: %w", err)
	}
	s := sample{reads: map[string]reads{}, lag: map[string]float64{}}
	if f := families["almoner_db_lagging_reads_total"]; f != nil {
		for _, m := range f.GetMetric() {
			pool, server := label(m, "pool"), label(m, "server")
			r := s.reads[pool]
			switch server {
			case "standby":
				r.standby = m.GetCounter().GetValue()
			case "primary":
				r.primary = m.GetCounter().GetValue()
			}
			s.reads[pool] = r
		}
	}
	if f := families["almoner_db_standby_lag_seconds"]; f != nil {
		for _, m := range f.GetMetric() {
			s.lag[label(m, "pool")] = m.GetGauge().GetValue()
		}
	}
	return s, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// scrape fetches and parses the server's metrics.
func scrape(ctx context.Context, url string) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return sample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sample{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return sample{}, fmt.Errorf("scrape %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return parseSample(resp.Body)
}

// delta is each pool's reads between two samples.
func delta(before, after sample) map[string]reads {
	out := map[string]reads{}
	for pool, r := range after.reads {
		out[pool] = r.sub(before.reads[pool])
	}
	return out
}
