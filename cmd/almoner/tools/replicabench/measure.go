package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/testpg"
)

// loadResult is the part of loadgen's JSON line this tool reads.
type loadResult struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50      float64 `json:"p50Ms"`
	P99      float64 `json:"p99Ms"`
}

// Result is one run's figures.
type Result struct {
	Seconds      float64 `json:"seconds"`
	Writers      int     `json:"writers"`
	Readers      int     `json:"readers"`
	PauseSeconds float64 `json:"pauseSeconds"`
	Orders       loadResult
	Reports      loadResult
	// Report statements each server executed (pg_stat_statements: the
	// statements reading the report views, orders.report_*_v1).
	ReportsStandby int64   `json:"reportsStandby"`
	ReportsPrimary int64   `json:"reportsPrimary"`
	ReportsShare   float64 `json:"reportsShare"`
	// The server's own count of the reads that may lag, by the side that
	// served them (almoner_db_lagging_reads_total, every pool summed).
	LaggingStandby float64 `json:"laggingStandby"`
	LaggingPrimary float64 `json:"laggingPrimary"`
	LaggingShare   float64 `json:"laggingShare"`
	// ReplayLag is the primary's pg_stat_replication.replay_lag sampled
	// each second: its median and maximum, seconds.
	ReplayLagMedian float64 `json:"replayLagMedian"`
	ReplayLagMax    float64 `json:"replayLagMax"`
}

func (r Result) row() string {
	return fmt.Sprintf("| %d | %d | %.0f s | %.0f / %.1f / %d | %.1f / %.0f / %d | %d | %d | %.1f %% | %.0f / %.0f (%.1f %%) | %.2f / %.2f |",
		r.Writers, r.Readers, r.PauseSeconds,
		r.Orders.RPS, r.Orders.P99, r.Orders.Errors, r.Reports.RPS, r.Reports.P99, r.Reports.Errors,
		r.ReportsStandby, r.ReportsPrimary, 100*r.ReportsShare, r.LaggingStandby, r.LaggingPrimary, 100*r.LaggingShare, r.ReplayLagMedian, r.ReplayLagMax)
}

// measure runs the mixed load and reads the counters around it.
func measure(ctx context.Context, o options, s *server, t tenant, primary, standby *testpg.Server) (Result, error) {
	metricsURL := "http://" + s.metrics + "/metrics"
	before, err := scrape(ctx, metricsURL)
	if err != nil {
		return Result{}, err
	}
	calls0, err := reportCalls(ctx, primary, standby)
	if err != nil {
		return Result{}, err
	}
	lagCtx, stopLag := context.WithCancel(ctx)
	lags := make(chan []float64, 1)
	go func() { lags <- sampleLag(lagCtx, primary.URL("almoner")) }()
	if o.pause > 0 {
		go pauseReplay(ctx, o, standby)
	}
	orders, reports, err := mixedLoad(ctx, o, t)
	stopLag()
	lag := <-lags
	if err != nil {
		return Result{}, err
	}
	after, err := scrape(ctx, metricsURL)
	if err != nil {
		return Result{}, err
	}
	calls1, err := reportCalls(ctx, primary, standby)
	if err != nil {
		return Result{}, err
	}
	r := result(o, orders, reports, delta(before, after), lag)
	r.ReportsPrimary, r.ReportsStandby = calls1[0]-calls0[0], calls1[1]-calls0[1]
	if n := r.ReportsPrimary + r.ReportsStandby; n > 0 {
		r.ReportsShare = float64(r.ReportsStandby) / float64(n)
	}
	return r, nil
}

// result assembles the figures.
func result(o options, orders, reports loadResult, d map[string]reads, lag []float64) Result {
	r := Result{Seconds: o.dur.Seconds(), Writers: o.writers, Readers: o.readers, PauseSeconds: o.pause.Seconds(),
		Orders: orders, Reports: reports}
	var all reads
	for _, x := range d {
		all.standby += x.standby
		all.primary += x.primary
	}
	r.LaggingStandby, r.LaggingPrimary, r.LaggingShare = all.standby, all.primary, all.share()
	if len(lag) > 0 {
		slices.Sort(lag)
		r.ReplayLagMedian, r.ReplayLagMax = lag[len(lag)/2], lag[len(lag)-1]
	}
	return r
}

// mixedLoad runs the writers and the readers side by side.
func mixedLoad(ctx context.Context, o options, t tenant) (loadResult, loadResult, error) {
	type res struct {
		r   loadResult
		err error
	}
	w := make(chan res, 1)
	go func() {
		r, err := runLoad(ctx, o, "orders", o.dur, o.writers, t.orderFlags())
		w <- res{r, err}
	}()
	reports, rerr := runLoad(ctx, o, "reports", o.dur, o.readers, t.reportFlags())
	orders := <-w
	if orders.err != nil {
		return loadResult{}, loadResult{}, orders.err
	}
	return orders.r, reports, rerr
}

// runLoad runs loadgen with flags for d at conc clients and keeps its line
// in the output folder. A request answered otherwise than expected fails
// the run: no read may fail while the standby lags or pauses.
func runLoad(ctx context.Context, o options, name string, d time.Duration, conc int, flags []string) (loadResult, error) {
	bin, err := absPath(o.loadgen)
	if err != nil {
		return loadResult{}, err
	}
	args := append([]string{"-name", name, "-c", strconv.Itoa(conc), "-d", d.String()}, flags...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	_ = os.WriteFile(filepath.Join(o.out, name+".json"), stdout.Bytes(), 0o600)
	var r loadResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return r, fmt.Errorf("loadgen %s: %w: %s", name, errors.Join(err, runErr), stderr.String())
	}
	if runErr != nil {
		return r, fmt.Errorf("loadgen %s: %d of %d requests failed: %w: %s", name, r.Errors, r.Requests, runErr, stderr.String())
	}
	return r, nil
}

// reportSQL matches the report statements in pg_stat_statements: those
// that read the report views.
const reportSQL = `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
	WHERE query LIKE '%report\_%\_v1%' AND query NOT LIKE '%pg_stat_statements%'`

// reportCalls counts the report statements the primary and the standby
// have executed.
func reportCalls(ctx context.Context, primary, standby *testpg.Server) ([2]int64, error) {
	var out [2]int64
	for i, s := range []*testpg.Server{primary, standby} {
		if err := queryRow(ctx, s.URL("almoner"), reportSQL, &out[i]); err != nil {
			return out, fmt.Errorf("report statements on port %d: %w", s.Port, err)
		}
	}
	return out, nil
}

// sampleLag reads the standby's replay lag on the primary each second
// until ctx ends (0 when caught up: replay_lag is NULL then).
func sampleLag(ctx context.Context, url string) []float64 {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil
	}
	defer conn.Close(context.Background())
	var out []float64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		var lag float64
		err := conn.QueryRow(ctx, `SELECT coalesce(max(extract(epoch FROM replay_lag)), 0)::float8 FROM pg_stat_replication`).Scan(&lag)
		if err == nil {
			out = append(out, lag)
		}
	}
}

// pauseReplay pauses the standby's replay a third of the way into the
// run for o.pause, then resumes it.
func pauseReplay(ctx context.Context, o options, standby *testpg.Server) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(o.dur / 3):
	}
	conn, err := pgx.Connect(ctx, standby.URL("almoner"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicabench: pause:", err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		fmt.Fprintln(os.Stderr, "replicabench: pause:", err)
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(o.pause):
	}
	_, _ = conn.Exec(context.Background(), `SELECT pg_wal_replay_resume()`)
}

// execSQL runs one statement on its own connection.
func execSQL(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// queryRow scans one row of sql into dest, on its own connection.
func queryRow(ctx context.Context, url, sql string, dest ...any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}
