package reports

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

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/reports/cohorts"
	"github.com/almoner/almoner/services/reports/dashboard"
)

// BenchmarkCohorts counts and pages cohorts on a tenant of
// ALMONER_COHORTS_BENCH contacts (1,000,000 for the recorded figures) and
// three gifts per contact on average over four years (3,000,000), and
// reports each scenario's p50 and p99 over its runs (docs/performance.md,
// Cohorts). Skipped unless ALMONER_COHORTS_BENCH is set. The tenant is
// kept in ALMONER_REPORTS_BENCH_DB when set (loaded once).
//
//	ALMONER_COHORTS_BENCH=1000000 ALMONER_REPORTS_BENCH_DB=almoner_bench_cohorts \
//	  go test -run '^$' -bench Cohorts -benchtime 50x -timeout 60m ./services/reports
func BenchmarkCohorts(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("ALMONER_COHORTS_BENCH"))
	if n <= 0 {
		b.Skip("set ALMONER_COHORTS_BENCH=<contacts> to run")
	}
	ctx := context.Background()
	pool, tenant := cohortBenchTenant(b, n)
	defer pool.Close()
	loc, _ := time.LoadLocation("America/New_York")
	cal := cohorts.NewCalendar(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), loc, time.July, "1000")
	st := cohorts.NewStore(pool)
	// The rolling window as the reports service reads it into the
	// tenant's calendar (Service.CohortCalendar).
	from, err := st.RollingFrom(ctx, tenant)
	if err != nil {
		b.Fatal(err)
	}
	cal.RollingFrom = from
	compile := func(b *testing.B, def string) cohorts.Query {
		node, err := cohorts.Parse([]byte(def))
		if err != nil {
			b.Fatal(err)
		}
		c := &cohorts.Compiler{Tenant: tenant, Currency: "USD", Calendar: cal, Resolve: func(_ context.Context, id string) (*cohorts.Node, error) {
			return cohorts.Parse([]byte(cohorts.BuiltinDefinition(id, cal)))
		}}
		q, err := c.Compile(ctx, "", node)
		if err != nil {
			b.Fatal(err)
		}
		return q
	}
	measure := func(b *testing.B, fn func() (int64, error)) {
		var times []time.Duration
		var got int64
		for b.Loop() {
			start := time.Now()
			n, err := fn()
			if err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
			got = n
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(got), "members")
	}
	for _, id := range []string{"lybunt", "sybunt", "first-time-donors", "lapsed", "major-donors", "monthly-donors", "new-this-month"} {
		q := compile(b, cohorts.BuiltinDefinition(id, cal))
		b.Run(id+"-count", func(b *testing.B) { measure(b, func() (int64, error) { return st.Count(ctx, q) }) })
	}
	lyb := compile(b, cohorts.BuiltinDefinition("lybunt", cal))
	b.Run("lybunt-first-page", func(b *testing.B) {
		measure(b, func() (int64, error) {
			_, total, err := st.Members(ctx, lyb, cohorts.Sorts["contactId"], 20, 0)
			return total, err
		})
	})
	ten := compile(b, tenConditions)
	b.Run("custom-10-conditions-count", func(b *testing.B) { measure(b, func() (int64, error) { return st.Count(ctx, ten) }) })
	// The dashboard of the same tenant, November 2026 and the quarter and
	// fiscal year holding it, each against the year before.
	dash := dashboard.NewStore(pool)
	for _, kind := range []string{dashboard.Month, dashboard.Quarter, dashboard.FiscalYear} {
		cur, err := dashboard.PeriodOf(kind, time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC), time.July)
		if err != nil {
			b.Fatal(err)
		}
		prev := cur.YearBefore(kind, time.July)
		q := dashboard.Query{Tenant: tenant, Currency: "USD", Location: loc, FiscalYearStart: time.July, Kind: kind,
			Current: cur, Previous: prev, Earlier: prev.YearBefore(kind, time.July)}
		b.Run("dashboard-"+kind, func(b *testing.B) {
			measure(b, func() (int64, error) {
				raw, err := dash.Figures(ctx, q)
				return raw.Donors[0], err
			})
		})
	}
}

// tenConditions is the benchmark's custom cohort: ten conditions over
// contact fields, lifetime giving, two windows and a reference.
const tenConditions = `{"all":[
 {"field":"contactType","op":"=","value":"Individual"},
 {"field":"doNotEmail","op":"=","value":false},
 {"not":{"field":"tags","op":"contains","value":"do-not-solicit"}},
 {"field":"giftCount","op":">=","value":2},
 {"field":"totalGiven","op":"between","value":[50,5000]},
 {"field":"lastGiftDate","op":">=","value":"2024-01-01"},
 {"field":"totalGiven","op":">","value":0,"fiscalYear":-1},
 {"field":"largestGift","op":">=","value":20,"window":{"from":"2025-01-15","to":"2026-11-30"}},
 {"any":[{"field":"createdAt","op":"<","value":"2026-01-01"},{"field":"hasActiveRecurring","op":"=","value":true}]},
 {"not":{"cohort":"new-this-month"}}
]}`

// cohortBenchTenant loads n contacts (every 20th an organization, every
// 50th tagged do-not-solicit, every 10th with doNotEmail) and 3n one-line
// gifts from 2023-01-01 to 2026-12-01, given by a hash of the gift
// number so donors give a varying number of times and some stop; then the
// giving summaries in one set-based rebuild (the load runs with the
// triggers off, as a bulk loader would).
func cohortBenchTenant(b *testing.B, n int) (*pgxpool.Pool, uuid.UUID) {
	ctx := context.Background()
	name := os.Getenv("ALMONER_REPORTS_BENCH_DB")
	if name == "" {
		name = "almoner_bench_cohorts"
	}
	pool, err := db.Open(ctx, keptDatabase(b, name))
	if err != nil {
		b.Fatal(err)
	}
	tenant := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "almoner-cohorts-bench-%d", n))
	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orders.contact_giving WHERE tenant_id = $1`, tenant).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have > 0 {
		return pool, tenant
	}
	start := time.Now()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	gifts, days := 3*n, 1430
	args := pgx.NamedArgs{"tenant": tenant, "fund": uuid.New(), "batch": uuid.New(), "n": n, "gifts": gifts, "days": days}
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`DELETE FROM orders.order_donations WHERE tenant_id = @tenant`,
		`DELETE FROM orders.orders WHERE tenant_id = @tenant`,
		`DELETE FROM orders.recurring_donations WHERE tenant_id = @tenant`,
		`DELETE FROM contacts.contacts WHERE tenant_id = @tenant`,
		`INSERT INTO orders.batches (tenant_id, id, name) VALUES (@tenant, @batch, 'bench')`,
		`INSERT INTO orders.funds (tenant_id, id, name) VALUES (@tenant, @fund::uuid, 'General ' || @fund::uuid::text)`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name, organization_name, tags, tag_keys, do_not_email, created_at)
			SELECT @tenant, g, CASE WHEN g % 20 = 0 THEN 'Organization' ELSE 'Individual' END, 'Donor', 'Number ' || g,
				CASE WHEN g % 20 = 0 THEN 'Org ' || g END,
				CASE WHEN g % 50 = 0 THEN ARRAY['Do-Not-Solicit'] ELSE '{}' END, CASE WHEN g % 50 = 0 THEN ARRAY['do-not-solicit'] ELSE '{}' END,
				g % 10 = 0, timestamptz '2022-06-01' + (g::float / @n::int) * interval '1640 days'
			FROM generate_series(1, @n::int) g`,
		`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor,
			deductible_minor, refunded_minor, has_donations, has_items, batch_id, created_at, updated_at)
			SELECT @tenant, gen_random_uuid(), g, 1 + abs(hashint8(g)::bigint) % (@n::int * 2 / 3), 'Completed', 'USD',
				1000 + (abs(hashint8(g + 7)::bigint) % 50) * (abs(hashint8(g + 11)::bigint) % 50) * 100, 0,
				1000 + (abs(hashint8(g + 7)::bigint) % 50) * (abs(hashint8(g + 11)::bigint) % 50) * 100,
				1000 + (abs(hashint8(g + 7)::bigint) % 50) * (abs(hashint8(g + 11)::bigint) % 50) * 100, 0, true, false, @batch,
				timestamptz '2023-01-01' + ((g - 1)::float / @gifts::int) * @days::int * interval '1 day', now()
			FROM generate_series(1, @gifts::int) g`,
		`INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
			SELECT tenant_id, id, gen_random_uuid(), 0, @fund, 'General', total_minor, true FROM orders.orders WHERE tenant_id = @tenant`,
		`INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, fund_id, payment_method, status, next_charge_date, origin_order_id)
			SELECT @tenant, gen_random_uuid(), g, 1000, 'USD', 'monthly', date '2026-01-01', @fund, 'Card', 'active', date '2026-12-15', gen_random_uuid()
			FROM generate_series(7, @n::int, 37) g`,
		`SET session_replication_role = origin`,
		`SELECT orders.rebuild_contact_giving(@tenant)`,
		// The calendar copy the orders housekeeping would take from the
		// settings (the benchmark's: New York, a July fiscal year): its
		// period rows.
		`SELECT orders.set_giving_calendar(@tenant, 'America/New_York', 7::smallint)`,
		`VACUUM ANALYZE`,
	} {
		if _, err := conn.Exec(ctx, q, args); err != nil {
			b.Fatalf("%v\n%s", err, q)
		}
	}
	b.Logf("loaded %d contacts and %d gifts in %s", n, gifts, time.Since(start).Round(time.Second))
	return pool, tenant
}
