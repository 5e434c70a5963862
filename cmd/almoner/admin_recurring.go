package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/config"
)

// tenantRecurringRetries runs `admin tenant recurring-retries --tenant ID
// --days 1,3,7`: the days after an installment's first decline on which
// the orders service tries it again before the schedule is past_due. It
// prints the tenant's days as stored.
//
// The call goes to the orders service: at ALMONER_ORDERS_ADDR in a split
// deployment, else where the other admin commands go (the one-process
// server); --orders-addr overrides both.
func tenantRecurringRetries(ctx context.Context, args []string) (proto.Message, error) {
	const use = "usage: almoner admin tenant recurring-retries --tenant ID --days 1,3,7"
	fs, addr := newFlags("tenant recurring-retries")
	if a := config.Env.String(config.ServiceAddrVar("orders"), ""); a != "" {
		*addr = authTarget{addr: dialable(a), source: config.ServiceAddrVar("orders")}
	}
	fs.Func("orders-addr", "orders service gRPC address (default: ALMONER_ORDERS_ADDR, else the auth service's)", func(v string) error {
		*addr = authTarget{addr: v, source: "--orders-addr"}
		return nil
	})
	tenant := fs.String("tenant", "", "tenant id (required)")
	days := fs.String("days", "", "retry days after the first decline, increasing, comma-separated (required; \"\" for none)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "days" })
	if *tenant == "" || !set {
		return nil, usageError{"tenant recurring-retries: --tenant and --days are required; " + use}
	}
	list, err := parseDays(*days)
	if err != nil {
		return nil, usageError{"tenant recurring-retries: --days: " + err.Error()}
	}
	conn, err := adminConn(*addr, "orders")
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return ordersv1.NewRecurringSettingsServiceClient(conn).SetRecurringRetries(ctx, &ordersv1.SetRecurringRetriesRequest{TenantId: *tenant, Days: list})
}

// parseDays reads "1,3,7" (the service checks the values).
func parseDays(s string) ([]int32, error) {
	var out []int32
	for _, p := range splitList(s) {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number of days", p)
		}
		out = append(out, int32(n))
	}
	return out, nil
}
