// Command pgbouncer runs Debian's PgBouncer on a free loopback port in
// front of a PostgreSQL server, as make test-pgbouncer does, for the
// benchmarks that compare a pooled server with a direct one
// (scripts/bench-orders.sh with BENCH_ORDERS_POOLER=1). It prints the
// port, then runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/almoner/almoner/pkg/testpg"
)

func main() {
	server := flag.String("server", "", "PostgreSQL server URL")
	mode := flag.String("mode", "transaction", "pool_mode")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	b, err := testpg.StartPgBouncer(ctx, *server, *mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgbouncer:", err)
		os.Exit(1)
	}
	defer b.Close()
	fmt.Println(b.Port)
	<-ctx.Done()
}
