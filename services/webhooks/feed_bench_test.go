package webhooks

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/testdb"
)

// BenchmarkEventFeedLag measures how soon a reader following the event
// feed sees a committed change while orders are being written: writers
// commit EVENT_BENCH_RATE (1,000) orders per second for EVENT_BENCH_SECONDS
// (10), each one transaction with an order's three audit rows (order,
// donation, payment; one statement, as orders writes them), from
// EVENT_BENCH_WRITERS (8) connections. One reader calls ListEvents (the
// gRPC handler the gateway calls, limit 1,000, types=order.created) from
// its nextCursor, and when it has caught up polls again after
// EVENT_BENCH_POLL_MS (50) ms. Lag is the time from just after an order's
// commit to the return of the page that holds it. Reported: lag-p50-ms,
// lag-p99-ms, lag-max-ms and the orders/s the writers reached.
// scripts/bench-webhooks.sh runs it on a private cluster (the audit horizon
// is cluster-wide) with -benchtime 1x.
func BenchmarkEventFeedLag(b *testing.B) {
	rate, secs := benchEnv("EVENT_BENCH_RATE", 1000), benchEnv("EVENT_BENCH_SECONDS", 10)
	writers, poll := benchEnv("EVENT_BENCH_WRITERS", 8), time.Duration(benchEnv("EVENT_BENCH_POLL_MS", 50))*time.Millisecond
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(b, Migrations()...))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	s, err := New(pool, Config{SecretKey: make([]byte, 32)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		tenant := uuid.NewString()
		var committed sync.Map // order id → commit time
		done := make(chan int)
		go func() { done <- writeOrders(ctx, b, pool, tenant, rate, secs, writers, &committed) }()
		lags := followOrders(ctx, b, &eventServer{s: s}, tenant, rate*secs, poll, &committed)
		n := <-done
		slices.Sort(lags)
		at := func(q float64) float64 { return float64(lags[int(q*float64(len(lags)-1))].Microseconds()) / 1000 }
		b.ReportMetric(at(0.5), "lag-p50-ms")
		b.ReportMetric(at(0.99), "lag-p99-ms")
		b.ReportMetric(at(1), "lag-max-ms")
		b.ReportMetric(float64(n)/float64(secs), "orders/s")
	}
}

// writeOrders commits rate·secs orders' audit rows, paced at rate per
// second across writers connections, noting each commit's time; it
// returns how many it wrote.
func writeOrders(ctx context.Context, b *testing.B, pool *pgxpool.Pool, tenant string, rate, secs, writers int, committed *sync.Map) int {
	total := rate * secs
	next := make(chan int)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id := strconv.Itoa(i)
				entries := []audit.Entry{
					{TenantID: tenant, EntityType: "Order", EntityID: id, Action: audit.Created, Actor: "system"},
					{TenantID: tenant, EntityType: "OrderDonation", EntityID: id, Action: audit.Created, Actor: "system"},
					{TenantID: tenant, EntityType: "OrderPayment", EntityID: id, Action: audit.Created, Actor: "system"},
				}
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					var batch pgx.Batch
					if err := audit.QueueAll(ctx, &batch, entries); err != nil {
						return err
					}
					return tx.SendBatch(ctx, &batch).Close()
				})
				if err != nil {
					b.Error(err)
					continue
				}
				committed.Store(id, time.Now())
			}
		}()
	}
	start := time.Now()
	for i := range total {
		// Paced by the clock, not by a ticker: a late writer catches up.
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return total
}

// followOrders reads the feed until want order.created events have come
// and returns each one's lag.
func followOrders(ctx context.Context, b *testing.B, a *eventServer, tenant string, want int, poll time.Duration, committed *sync.Map) []time.Duration {
	ctx = authctx.NewIncomingContext(ctx, authctx.Principal{TenantID: tenant, KeyID: "bench", Scopes: []string{scopes.EventsView}})
	limit := int32(maxFeedLimit)
	lags := make([]time.Duration, 0, want)
	after := ""
	deadline := time.Now().Add(time.Duration(want/100+60) * time.Second)
	for len(lags) < want {
		if time.Now().After(deadline) {
			b.Fatalf("feed read %d of %d orders", len(lags), want)
		}
		resp, err := a.ListEvents(ctx, &webhooksv1.ListEventsRequest{TenantId: tenant, After: after, Limit: &limit, Types: []string{"order.created"}})
		if err != nil {
			b.Fatal(err)
		}
		seen := time.Now()
		for _, e := range resp.GetItems() {
			at, ok := committed.Load(e.GetData().GetEntityId())
			if !ok {
				// Read before the writer noted its commit: no lag to speak of.
				at = seen
			}
			lags = append(lags, seen.Sub(at.(time.Time)))
		}
		after = resp.GetNextCursor()
		if !resp.GetHasMore() {
			time.Sleep(poll)
		}
	}
	return lags
}
