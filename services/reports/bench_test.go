package reports

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/reports/render"
)

// BenchmarkReports runs donations-by-period (month, one year) and lybunt
// on a tenant with ALMONER_REPORTS_BENCH orders (1,000,000 for the recorded
// figures) and a fifth as many contacts, then exports every donation line
// as CSV and Excel, reporting the peak Go heap (scripts/bench-reports.sh
// adds the process's peak RSS). It is skipped unless ALMONER_REPORTS_BENCH
// is set: loading a million orders takes minutes and has no place in plain
// go test.
//
// With ALMONER_REPORTS_BENCH_DB=<name> the tenant is loaded once into that
// database (created on the test server if missing, migrated on every run)
// and kept, so later runs start at once; otherwise a fresh test database is
// loaded and dropped.
//
//	ALMONER_REPORTS_BENCH=1000000 ALMONER_REPORTS_BENCH_DB=almoner_bench_reports \
//	  go test -run '^$' -bench Reports -benchtime 3x ./services/reports
func BenchmarkReports(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("ALMONER_REPORTS_BENCH"))
	if n <= 0 {
		b.Skip("set ALMONER_REPORTS_BENCH=<orders> to run")
	}
	ctx := context.Background()
	pool, tenant := benchTenant(b, n)
	defer pool.Close()
	svc := New(pool, Config{Now: func() time.Time { return day("2026-06-30") }}, nil)
	run := func(b *testing.B, key string, raw map[string]string) {
		typ := typeByKey(key)
		vals, _, err := typ.resolve(raw, day("2026-06-30"))
		if err != nil {
			b.Fatal(err)
		}
		var rows int64
		for b.Loop() {
			_, total, _, err := svc.store.Page(ctx, tenant, typ.build(vals), typ.Columns, 0, 50)
			if err != nil {
				b.Fatal(err)
			}
			rows = total
		}
		b.ReportMetric(float64(rows), "rows")
	}
	b.Run("donations-by-period-month", func(b *testing.B) {
		run(b, "donations-by-period", map[string]string{"Interval": "month", "From": "2025-01-01", "To": "2025-12-31"})
	})
	b.Run("lybunt", func(b *testing.B) { run(b, "lybunt", map[string]string{"Year": "2026"}) })
	for _, format := range []string{"csv", "xlsx"} {
		b.Run("export-"+format, func(b *testing.B) {
			// Every donation line as a row: the giving statement's columns
			// over the whole tenant, the same work as a giving statement
			// of a contact with a million gifts.
			typ := &Type{Key: "bench", Columns: typeByKey("giving-statement").Columns}
			q := typeByKey("giving-statement").build(Values{"ContactId": int64(0), "Year": int64(2025)})
			q.SQL = `SELECT gift_date AS "GiftDate", order_number AS "OrderNumber", fund_name AS "Description", currency AS "Currency",
				net_amount_minor AS "Amount", net_amount_minor AS "DeductibleAmount" FROM orders.report_donations_v1 WHERE tenant_id = $1`
			q.Args = nil
			for b.Loop() {
				var peak atomic.Uint64
				done := make(chan struct{})
				go func() {
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > peak.Load() {
							peak.Store(ms.HeapInuse)
						}
						select {
						case <-done:
							return
						case <-time.After(50 * time.Millisecond):
						}
					}
				}()
				w, err := render.NewWriter(format, render.NewTable("Bench", typ.Columns), render.Meta{}, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				rows, totals, err := svc.store.Stream(ctx, tenant, q, typ.Columns, w.Row)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Close(totals); err != nil {
					b.Fatal(err)
				}
				close(done)
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
			}
		})
	}
}

// benchTenant returns a pool and a tenant holding n orders. The tenant's id
// is derived from n, so a kept database can hold several sizes.
// scripts/bench-reports.sh also loads the tenant it created through the
// API, for an export through the real server: ALMONER_REPORTS_BENCH_TENANT
// names it, ALMONER_REPORTS_BENCH_DONORS sets the number of contacts (n/5
// by default; 1 makes a giving statement of n rows) and
// ALMONER_REPORTS_BENCH_DAYS the days the gifts span from 2025-01-01 (730).
func benchTenant(b *testing.B, n int) (*pgxpool.Pool, uuid.UUID) {
	ctx := context.Background()
	url := ""
	if name := os.Getenv("ALMONER_REPORTS_BENCH_DB"); name != "" {
		url = keptDatabase(b, name)
	} else {
		url = testdb.New(b, testMigrations()...)
	}
	pool, err := db.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	tenant := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "almoner-reports-bench-%d", n))
	if id := os.Getenv("ALMONER_REPORTS_BENCH_TENANT"); id != "" {
		if tenant, err = uuid.Parse(id); err != nil {
			b.Fatal(err)
		}
	}
	donors, days := n/5, 730
	if v := os.Getenv("ALMONER_REPORTS_BENCH_DONORS"); v != "" {
		donors, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("ALMONER_REPORTS_BENCH_DAYS"); v != "" {
		days, _ = strconv.Atoi(v)
	}
	if donors <= 0 || days <= 0 {
		b.Fatal("ALMONER_REPORTS_BENCH_DONORS and _DAYS must be positive")
	}
	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1`, tenant).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == n {
		b.Logf("tenant with %d orders already loaded", n)
		return pool, tenant
	}
	start := time.Now()
	err = db.InTx(ctx, pool, func(tx pgx.Tx) error { return seed(ctx, tx, tenant, n, donors, days) })
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d orders in %s", n, time.Since(start).Round(time.Second))
	return pool, tenant
}

// keptDatabase creates the named database on the test server if it is
// missing and applies pending migrations (a kept database gains new ones).
func keptDatabase(b *testing.B, name string) string {
	ctx := context.Background()
	server := testdb.ServerURL()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			b.Fatal(err)
		}
	}
	url := testdb.WithDatabase(server, name)
	if err := db.Migrate(ctx, url, testMigrations()...); err != nil {
		b.Fatal(err)
	}
	return url
}

// seed loads n one-donation orders spread evenly over days from 2025-01-01
// and donors contacts. Orders go to contacts by a hash of the order number,
// so donors give a varying number of times and some stop (LYBUNT and
// SYBUNT have rows); 1 % of the orders are partly refunded, through
// orders.refunds and the per-line shares the orders service stores. The
// rows are made by the server (INSERT … SELECT generate_series), which
// loads as fast as COPY without shipping them.
func seed(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, n, donors, days int) error {
	args := pgx.NamedArgs{"tenant": tenant, "fund": uuid.New(), "batch": uuid.New(), "n": n, "donors": donors, "days": days}
	for _, q := range []string{
		`DELETE FROM orders.refunds WHERE tenant_id = @tenant`,
		`DELETE FROM orders.order_donations WHERE tenant_id = @tenant`,
		`DELETE FROM orders.orders WHERE tenant_id = @tenant`,
		`DELETE FROM contacts.contacts WHERE tenant_id = @tenant`,
		`INSERT INTO orders.batches (tenant_id, id, name) VALUES (@tenant, @batch, 'bench')`,
		`INSERT INTO orders.funds (tenant_id, id, name) VALUES (@tenant, @fund::uuid, 'General ' || @fund::uuid::text)`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name)
			SELECT @tenant, g, 'Individual', 'Donor', 'Number ' || g FROM generate_series(1, @donors::int) g`,
		`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor,
			deductible_minor, refunded_minor, has_donations, has_items, batch_id, created_at, updated_at)
			SELECT @tenant, gen_random_uuid(), g, 1 + abs(hashint8(g)::bigint) % @donors::int,
				CASE WHEN g % 100 = 0 THEN 'PartiallyRefunded' ELSE 'Completed' END, 'USD',
				1000 + g % 9000, 0, 1000 + g % 9000, 1000 + g % 9000, CASE WHEN g % 100 = 0 THEN 500 ELSE 0 END, true, false, @batch,
				timestamptz '2025-01-01' + ((g - 1)::float / @n::int) * @days::int * interval '1 day', now()
			FROM generate_series(1, @n::int) g`,
		`INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
			SELECT tenant_id, id, gen_random_uuid(), 0, @fund, 'General', total_minor, true FROM orders.orders WHERE tenant_id = @tenant`,
		`INSERT INTO orders.refunds (tenant_id, order_id, id, amount_minor, reason, actor, created_at)
			SELECT tenant_id, id, gen_random_uuid(), refunded_minor, 'bench', 'bench', created_at + interval '1 day'
			FROM orders.orders WHERE tenant_id = @tenant AND refunded_minor > 0`,
		`SELECT orders.apportion_refund(tenant_id, id) FROM orders.orders WHERE tenant_id = @tenant AND refunded_minor > 0`,
	} {
		if _, err := tx.Exec(ctx, q, args); err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
	}
	return nil
}
