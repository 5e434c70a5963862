// Command replicabench measures the standby's share of the reads that may
// lag under mixed load (issue 36, docs/scaling.md "Figures"): on a private
// primary and a streaming standby of it (pkg/testpg, as TestReadReplica
// makes them), it starts the one-process server with
// ALMONER_READ_DATABASE_URL, then runs donation orders and report runs
// side by side with loadgen, samples the standby's replay lag each second,
// and reads the server's almoner_db_lagging_reads_total before and after.
// With -pause it pauses the standby's replay for that long a third of the
// way in, which the read pool must notice and route around (the lag bound
// is ALMONER_READ_MAX_LAG, -max-lag).
//
//	replicabench -almoner bin/almoner -loadgen bin/loadgen -d 60s -writers 8 -readers 2 [-pause 15s]
//
// It prints one JSON object and one markdown row. The private servers run
// pkg/testpg's settings (fsync and synchronous_commit off): the figure is
// the routing, not the durability cost.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/almoner/almoner/pkg/testpg"
)

// options are replicabench's flags.
type options struct {
	almoner, loadgen, out, maxLag string
	dur, pause, seed              time.Duration
	writers, readers, contacts    int
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.almoner, "almoner", "bin/almoner", "the almoner binary")
	flag.StringVar(&o.loadgen, "loadgen", "bin/loadgen", "the loadgen binary")
	flag.StringVar(&o.out, "out", "bin/bench/replica", "folder for logs and loadgen results")
	flag.StringVar(&o.maxLag, "max-lag", "", "ALMONER_READ_MAX_LAG for the server (default: the server's, 5s)")
	flag.DurationVar(&o.dur, "d", time.Minute, "how long the mixed load runs")
	flag.DurationVar(&o.seed, "seed", 10*time.Second, "orders written before the mixed load, so reports have rows")
	flag.DurationVar(&o.pause, "pause", 0, "pause the standby's replay this long, a third of the way in")
	flag.IntVar(&o.writers, "writers", 8, "clients creating donation orders")
	flag.IntVar(&o.readers, "readers", 2, "clients running reports")
	flag.IntVar(&o.contacts, "contacts", 500, "contacts the orders are spread over")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicabench:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	fmt.Println(res.row())
}

// run sets up the servers, then measures.
func run(ctx context.Context, o options) (Result, error) {
	if err := os.MkdirAll(o.out, 0o750); err != nil {
		return Result{}, err
	}
	primary, err := testpg.StartPrimary(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("primary: %w", err)
	}
	defer primary.Close()
	// pg_stat_statements on both servers counts the report statements
	// each ran: the standby's share, read from the servers themselves.
	if err := execSQL(ctx, primary.URL("postgres"), `CREATE DATABASE almoner`); err != nil {
		return Result{}, err
	}
	if err := execSQL(ctx, primary.URL("almoner"), `CREATE EXTENSION pg_stat_statements`); err != nil {
		return Result{}, err
	}
	standby, err := primary.Standby(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("standby: %w", err)
	}
	defer standby.Close()
	srv, err := startServer(ctx, o, primary.URL("almoner"), standby.URL("almoner"))
	if err != nil {
		return Result{}, err
	}
	defer srv.stop()
	t, err := provision(ctx, srv, o.contacts)
	if err != nil {
		return Result{}, err
	}
	if _, err := runLoad(ctx, o, "seed", o.seed, o.writers, t.orderFlags()); err != nil {
		return Result{}, fmt.Errorf("seed: %w", err)
	}
	return measure(ctx, o, srv, t, primary, standby)
}

// absPath resolves a flag's path against the working directory, so the
// children started from other folders find it.
func absPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(a); err != nil {
		return "", errors.New(p + " not found: run make build and build cmd/almoner/tools/loadgen")
	}
	return a, nil
}
