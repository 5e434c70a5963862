package dashboard

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	contactsmig "github.com/almoner/almoner/services/contacts/migrations"
	ordersmig "github.com/almoner/almoner/services/orders/migrations"
)

// BenchmarkDashboard reads the dashboard of a tenant holding
// ALMONER_DASHBOARD_BENCH gifts (3,000,000 for the target) from a
// third as many contacts, spread over three years from 2024-01-01, 2 % in
// EUR, 1 % partly refunded, over three funds; and of a portfolio of 500 of
// those contacts. Each sub-benchmark reports the p50 and p99 of its reads
// (ms). Skipped unless ALMONER_DASHBOARD_BENCH is set.
//
// With ALMONER_DASHBOARD_BENCH_DB=<name> the tenant is loaded once into
// that database on the test server and kept (scripts/bench-dashboard.sh).
//
//	ALMONER_DASHBOARD_BENCH=3000000 ALMONER_DASHBOARD_BENCH_DB=almoner_bench_dashboard \
//	  go test -run '^$' -bench Dashboard -benchtime 50x ./services/reports/dashboard
func BenchmarkDashboard(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("ALMONER_DASHBOARD_BENCH"))
	if n <= 0 {
		b.Skip("set ALMONER_DASHBOARD_BENCH=<gifts> to run")
	}
	ctx := context.Background()
	pool, tenant := dashboardTenant(b, n)
	defer pool.Close()
	st := NewStore(pool)
	portfolio, err := st.Portfolio(ctx, tenant, benchUser)
	if err != nil {
		b.Fatal(err)
	}
	loc, _ := time.LoadLocation("America/New_York")
	for _, c := range []struct {
		name     string
		kind     string
		contacts []int64
	}{
		{"month", Month, nil}, {"quarter", Quarter, nil}, {"fiscal-year", FiscalYear, nil},
		{"portfolio-month", Month, portfolio}, {"portfolio-fiscal-year", FiscalYear, portfolio},
	} {
		b.Run(c.name, func(b *testing.B) {
			cur, err := PeriodOf(c.kind, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC), time.July)
			if err != nil {
				b.Fatal(err)
			}
			prev := cur.YearBefore(c.kind, time.July)
			q := Query{Tenant: tenant, Currency: "USD", Location: loc, FiscalYearStart: time.July, Kind: c.kind,
				Current: cur, Previous: prev, Earlier: prev.YearBefore(c.kind, time.July), Contacts: c.contacts}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := st.Figures(ctx, q); err != nil {
					b.Fatal(err)
				}
				if c.contacts != nil {
					if _, err := st.Worklist(ctx, tenant, c.contacts, time.Date(2024, 9, 15, 0, 0, 0, 0, loc)); err != nil {
						b.Fatal(err)
					}
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			ms := func(p float64) float64 {
				return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.5), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}

// benchUser holds the bench portfolio.
var benchUser = uuid.MustParse("0193a000-0000-7000-8000-000000000001")

// dashboardTenant returns a pool and a tenant holding n gifts, loading
// them unless a kept database has them already.
func dashboardTenant(b *testing.B, n int) (*pgxpool.Pool, uuid.UUID) {
	ctx := context.Background()
	migs := []db.Migrations{audit.Migrations(), contactsmig.Set(), ordersmig.Set()}
	url := ""
	if name := os.Getenv("ALMONER_DASHBOARD_BENCH_DB"); name != "" {
		url = keptDatabase(b, name, migs)
	} else {
		url = testdb.New(b, migs...)
	}
	pool, err := db.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	tenant := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "almoner-dashboard-bench-%d", n))
	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1`, tenant).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == n {
		b.Logf("tenant with %d gifts already loaded", n)
		return pool, tenant
	}
	start := time.Now()
	if err := db.InTx(ctx, pool, func(tx pgx.Tx) error { return seedGifts(ctx, tx, tenant, n) }); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d gifts in %s", n, time.Since(start).Round(time.Second))
	return pool, tenant
}

// keptDatabase creates the named database on the test server if it is
// missing and applies pending migrations.
func keptDatabase(b *testing.B, name string, migs []db.Migrations) string {
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
	if err := db.Migrate(ctx, url, migs...); err != nil {
		b.Fatal(err)
	}
	return url
}

// seedGifts loads n one-donation gifts from n/3 contacts over 1,095 days
// from 2024-01-01 (server-side INSERT … SELECT), contacts by a hash of
// the gift's number so donors give a varying number of times, and assigns
// 500 contacts to benchUser.
func seedGifts(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, n int) error {
	args := pgx.NamedArgs{"tenant": tenant, "batch": uuid.New(), "n": n, "donors": max(n/3, 1), "user": benchUser}
	for _, q := range []string{
		`DELETE FROM orders.refunds WHERE tenant_id = @tenant`,
		`DELETE FROM orders.order_donations WHERE tenant_id = @tenant`,
		`DELETE FROM orders.orders WHERE tenant_id = @tenant`,
		`DELETE FROM orders.funds WHERE tenant_id = @tenant`,
		`DELETE FROM contacts.contacts WHERE tenant_id = @tenant`,
		// The calendar copy orders' housekeeping would take (New York, a
		// July fiscal year), set before the gifts so that their triggers
		// keep the period rows and tallies the dashboard reads.
		`SELECT orders.set_giving_calendar(@tenant, 'America/New_York', 7::smallint)`,
		`INSERT INTO orders.batches (tenant_id, id, name) VALUES (@tenant, @batch, 'bench')`,
		`INSERT INTO orders.funds (tenant_id, id, name) SELECT @tenant, gen_random_uuid(), 'Fund ' || g FROM generate_series(0, 2) g`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name, assigned_user_id)
			SELECT @tenant, g, 'Individual', 'Donor', 'Number ' || g, CASE WHEN g <= 500 THEN @user::uuid END
			FROM generate_series(1, @donors::int) g`,
		`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor,
			deductible_minor, refunded_minor, has_donations, has_items, batch_id, created_at, updated_at)
			SELECT @tenant, gen_random_uuid(), g, 1 + abs(hashint8(g)::bigint) % @donors::int,
				CASE WHEN g % 100 = 0 THEN 'PartiallyRefunded' ELSE 'Completed' END, CASE WHEN g % 50 = 7 THEN 'EUR' ELSE 'USD' END,
				1000 + g % 9000, 0, 1000 + g % 9000, 1000 + g % 9000, CASE WHEN g % 100 = 0 THEN 500 ELSE 0 END, true, false, @batch,
				timestamptz '2024-01-01' + ((g - 1)::float / @n::int) * 1095 * interval '1 day', now()
			FROM generate_series(1, @n::int) g`,
		`INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
			SELECT o.tenant_id, o.id, gen_random_uuid(), 0, f.id, f.name, o.total_minor, true
			FROM orders.orders o JOIN (SELECT id, name, row_number() OVER (ORDER BY name) - 1 AS k FROM orders.funds WHERE tenant_id = @tenant) f
			  ON f.k = o.order_number % 3
			WHERE o.tenant_id = @tenant`,
		`UPDATE orders.orders SET donation_refunded_minor = refunded_minor WHERE tenant_id = @tenant AND refunded_minor > 0`,
		`UPDATE orders.order_donations d SET refunded_minor = o.refunded_minor FROM orders.orders o
			WHERE o.tenant_id = @tenant AND d.tenant_id = o.tenant_id AND d.order_id = o.id AND o.refunded_minor > 0`,
	} {
		if _, err := tx.Exec(ctx, q, args); err != nil {
			return fmt.Errorf("%w\n%s", err, q)
		}
	}
	return nil
}
