// Command tenantsbench is the Go half of `make bench-tenants`
// (scripts/bench-tenants.sh, docs/performance.md "Ten thousand tenants"):
// it loads synthetic tenants into a database, measures a handful of reads
// of one small and one large tenant through the HTTP API, and turns the
// measurements into the comparison table.
//
//	tenantsbench load -database-url URL -small-from 0 -small-to 10 [-large 1000000]
//	tenantsbench measure -base http://127.0.0.1:18090 -label A -round 1 -small-tenant ID -small-key KEY -large-tenant ID -large-key KEY
//	tenantsbench report -base-label A -label B < measurements.jsonl
//
// load writes tenants straight into the tables, set-based (INSERT …
// SELECT with the triggers off, as the cohorts benchmark's loader does),
// then rebuilds what the triggers would have kept and runs VACUUM ANALYZE;
// it prints one JSON object naming the tenants the measure step reads.
// measure prints one JSON line of raw latencies per call; report reads
// those lines and prints a markdown table.
//
// It only talks to the database URL and the base address it is given
// (a private cluster and loopback in the script).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "load":
		err = runLoad(os.Args[2:])
	case "measure":
		err = runMeasure(os.Args[2:])
	case "report":
		err = runReport(os.Args[2:], os.Stdin, os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tenantsbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tenantsbench load|measure|report [flags] (tenantsbench <command> -h for the flags)")
	os.Exit(2)
}
