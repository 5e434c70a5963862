package db

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestParseLSN(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"0/0", 0, false},
		{"16/B374D848", 0x16_B374D848, false},
		{"FFFFFFFF/FFFFFFFF", 1<<64 - 1, false},
		{"16B374D848", 0, true},
		{"x/1", 0, true},
		{"1/100000000", 0, true},
	}
	for _, tc := range tests {
		got, err := parseLSN(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseLSN(%q) = %x, %v; want %x, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestNoteLSN holds the lag to the age of the oldest primary position the
// standby has not replayed, whatever the time since its last commit.
func TestNoteLSN(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	r := &ReadPool{now: func() time.Time { return now }}
	steps := []struct {
		advance         time.Duration
		primary, replay uint64
		want            time.Duration
	}{
		{0, 100, 100, 0},                     // in sync
		{time.Second, 200, 150, 0},           // behind by what was just read
		{time.Second, 300, 150, time.Second}, // 200 (read a second ago) still missing
		{time.Second, 300, 250, time.Second}, // 200 replayed; 300 read a second ago
		{time.Second, 300, 300, 0},           // caught up
		{10 * time.Second, 300, 300, 0},      // idle primary: no lag however long
		{time.Second, 400, 300, 0},           // paused replay from here on
		{3 * time.Second, 400, 300, 3 * time.Second},
		{3 * time.Second, 500, 300, 6 * time.Second},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got := r.noteLSN(s.primary, s.replay, now); got != s.want {
			t.Errorf("step %d: lag %v, want %v", i, got, s.want)
		}
	}
	for i := 0; i < 3*maxSamples; i++ {
		now = now.Add(time.Second)
		r.noteLSN(uint64(600+i), 300, now)
	}
	if len(r.samples) > maxSamples || r.samples[0].lsn != 400 {
		t.Errorf("samples kept: %d, oldest %d; want at most %d, oldest 400", len(r.samples), r.samples[0].lsn, maxSamples)
	}
}

func TestReadCollector(t *testing.T) {
	r := &ReadPool{now: time.Now}
	r.standbyReads.Add(3)
	r.primaryReads.Add(1)
	r.lag = 1500 * time.Millisecond
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector("reports"))
	got, err := testutil.GatherAndCount(reg)
	if err != nil || got != 3 {
		t.Fatalf("gathered %d metrics, %v; want 3", got, err)
	}
	want := `# HELP almoner_db_lagging_reads_total Reads that may lag, by the server that served them (standby, primary).
# TYPE almoner_db_lagging_reads_total counter
almoner_db_lagging_reads_total{pool="reports",server="primary"} 1
almoner_db_lagging_reads_total{pool="reports",server="standby"} 3
# HELP almoner_db_standby_lag_seconds The read replica's replay lag at the last check.
# TYPE almoner_db_standby_lag_seconds gauge
almoner_db_standby_lag_seconds{pool="reports"} 1.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
