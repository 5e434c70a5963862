package main

import (
	"math"
	"strings"
	"testing"
)

const exposition = `# HELP almoner_db_lagging_reads_total Reads that may lag, by the server that served them (standby, primary).
# TYPE almoner_db_lagging_reads_total counter
almoner_db_lagging_reads_total{pool="reports",server="primary"} %P
almoner_db_lagging_reads_total{pool="reports",server="standby"} %S
almoner_db_lagging_reads_total{pool="webhooks",server="primary"} 0
almoner_db_lagging_reads_total{pool="webhooks",server="standby"} 7
# HELP almoner_db_standby_lag_seconds The read replica's replay lag at the last check.
# TYPE almoner_db_standby_lag_seconds gauge
almoner_db_standby_lag_seconds{pool="reports"} 0.25
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 42
`

func expo(primary, standby string) string {
	return strings.NewReplacer("%P", primary, "%S", standby).Replace(exposition)
}

func TestParseSampleAndShare(t *testing.T) {
	before, err := parseSample(strings.NewReader(expo("10", "30")))
	if err != nil {
		t.Fatal(err)
	}
	if got := before.lag["reports"]; got != 0.25 {
		t.Errorf("lag = %v, want 0.25", got)
	}
	tests := []struct {
		name             string
		primary, standby string
		want             reads
		share            float64
	}{
		{"all on the standby", "10", "130", reads{standby: 100}, 1},
		{"a quarter on the primary", "35", "105", reads{standby: 75, primary: 25}, 0.75},
		{"none", "10", "30", reads{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after, err := parseSample(strings.NewReader(expo(tt.primary, tt.standby)))
			if err != nil {
				t.Fatal(err)
			}
			d := delta(before, after)
			if d["reports"] != tt.want {
				t.Errorf("reports delta = %+v, want %+v", d["reports"], tt.want)
			}
			if got := d["reports"].share(); math.Abs(got-tt.share) > 1e-9 {
				t.Errorf("share = %v, want %v", got, tt.share)
			}
			if d["webhooks"] != (reads{}) {
				t.Errorf("webhooks delta = %+v, want none", d["webhooks"])
			}
		})
	}
}

func TestParseSampleRefusesGarbage(t *testing.T) {
	if _, err := parseSample(strings.NewReader("almoner_db_lagging_reads_total{pool=\"reports\" 12\n")); err == nil {
		t.Fatal("a broken exposition parsed")
	}
}
