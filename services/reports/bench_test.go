package reports

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/reports/render"
)

// BenchmarkReports runs donations-by-period (month, one year) and lybunt
// on a tenant with ALMONER_REPORTS_BENCH orders (1,000,000 for the recorded
// figures) and a fifth as many contacts, then exports every donation line
// of the year as CSV and Excel, reporting the peak Go heap. It is skipped
// unless ALMONER_REPORTS_BENCH is set: loading a million orders takes
// minutes and has no place in plain go test.
//
//	ALMONER_REPORTS_BENCH=1000000 go test -run '^$' -bench Reports -benchtime 3x ./services/reports
func BenchmarkReports(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("ALMONER_REPORTS_BENCH"))
	if n <= 0 {
		b.Skip("set ALMONER_REPORTS_BENCH=<orders> to run")
	}
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(b, Migrations()...))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	tenant, fund, batch := uuid.New(), uuid.New(), uuid.New()
	start := time.Now()
	for _, q := range []string{
		`INSERT INTO orders.batches (tenant_id, id, name) SELECT $1, $3, 'bench' WHERE $2::uuid IS NOT NULL AND $4::int > 0`,
		`INSERT INTO orders.funds (tenant_id, id, name) SELECT $1, $2, 'General' WHERE $3::uuid IS NOT NULL AND $4::int > 0`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name)
			SELECT $1, g, 'Individual', 'Donor', 'Number ' || g FROM generate_series(1, $4::int / 5) g WHERE $2::uuid IS NOT NULL AND $3::uuid IS NOT NULL`,
		// Orders spread over 2025-2026, contacts round-robin, 1 % refunded in part.
		`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor,
			deductible_minor, refunded_minor, has_donations, has_items, batch_id, created_at, updated_at)
			SELECT $1, gen_random_uuid(), g, 1 + g % ($4::int / 5), CASE WHEN g % 100 = 0 THEN 'PartiallyRefunded' ELSE 'Completed' END, 'USD',
				1000 + g % 9000, 0, 1000 + g % 9000, 1000 + g % 9000, CASE WHEN g % 100 = 0 THEN 500 ELSE 0 END, true, false, $3,
				timestamptz '2025-01-01' + (g::float / $4::int) * interval '730 days', now()
			FROM generate_series(1, $4::int) g WHERE $2::uuid IS NOT NULL`,
		`INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
			SELECT tenant_id, id, gen_random_uuid(), 0, $2, 'General', total_minor, true FROM orders.orders WHERE tenant_id = $1 AND $3::uuid IS NOT NULL AND $4::int > 0`,
	} {
		if _, err := pool.Exec(ctx, q, tenant, fund, batch, n); err != nil {
			b.Fatalf("%v\n%s", err, q)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d orders in %s", n, time.Since(start).Round(time.Second))
	svc := New(pool, Config{Now: func() time.Time { return day("2026-06-30") }}, nil)
	run := func(b *testing.B, key string, raw map[string]string) {
		typ := typeByKey(key)
		vals, _, err := typ.resolve(raw, day("2026-06-30"))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, _, _, err := svc.store.Page(ctx, tenant, typ.build(vals), typ.Columns, 0, 50); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("donations-by-period-month", func(b *testing.B) {
		run(b, "donations-by-period", map[string]string{"Interval": "month", "From": "2025-01-01", "To": "2025-12-31"})
	})
	b.Run("lybunt", func(b *testing.B) { run(b, "lybunt", map[string]string{"Year": "2026"}) })
	for _, format := range []string{"csv", "xlsx"} {
		b.Run("export-"+format, func(b *testing.B) {
			// Every donation line as a row: the giving statement's query
			// shape without the contact filter would need a type; the
			// donations view read in full is the same work.
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
				rows, err := svc.store.Stream(ctx, tenant, q, w.Row)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Close(nil); err != nil {
					b.Fatal(err)
				}
				close(done)
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
			}
		})
	}
}
