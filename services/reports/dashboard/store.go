package dashboard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
)

// Store reads the figures from the views orders and contacts publish.
// Every read of it may lag: they go through reads, a read replica within
// its lag bound, else the primary (docs/scaling.md).
type Store struct {
	reads *db.ReadPool
}

// NewStore returns the store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{reads: db.NewReadPool(pool)} }

// WithReads has the dashboards read through reads (nil: the primary); it
// returns s.
func (s *Store) WithReads(reads *db.ReadPool) *Store {
	if reads != nil {
		s.reads = reads
	}
	return s
}

// Query is what one dashboard reads: the tenant, its currency and
// calendar, the period (its kind and span), the same period a year
// earlier and the one a year before that (whose donors the earlier
// period's retention counts), and, for a portfolio, its contacts (nil:
// the whole tenant).
type Query struct {
	Tenant          uuid.UUID
	Currency        string
	Location        *time.Location
	FiscalYearStart time.Month
	Kind            string
	Current         Span
	Previous        Span
	Earlier         Span
	Contacts        []int64
}

// periodKinds are the kinds of orders' local period rows
// (orders.report_contact_giving_periods_v1) per kind of dashboard period.
var periodKinds = map[string]string{Month: "m", Quarter: "q", FiscalYear: "y"}

// Totals are a currency's net giving and gift count in a period.
type Totals struct {
	Minor int64
	Gifts int64
}

// Raw is what the views answered, before any arithmetic.
type Raw struct {
	// Amounts are each period's totals per currency: [0] the period, [1]
	// a year earlier.
	Amounts [2]map[string]Totals
	// Donors count contacts per period: [2] is two years back, the base
	// of the earlier period's retention.
	Donors [3]int64
	// New and Retained count contacts per period.
	New, Retained [2]int64
	// Days are the period's totals per day (YYYY-MM-DD), tenant currency.
	Days map[string]Totals
	// Funds are the period's net giving per fund, tenant currency.
	Funds []Fund
	// Recurring are the schedules as they stand.
	Recurring Recurring
}

// Fund is a fund's net giving.
type Fund struct {
	ID, Name string
	Minor    int64
}

// Recurring are the schedules' counts and monthly revenue (minor units).
type Recurring struct {
	Active, PastDue int64
	MonthlyMinor    int64
}

// counted is a gift that counts, on the report_orders_v1 row o: an order
// with a donation line, Completed or PartiallyRefunded, whose donation
// lines are not refunded in full (a voided or fully refunded order is no
// gift, nor one whose items alone stand; a partial refund is subtracted
// through donation_net_minor) — the gifts orders' giving summaries count.
const counted = `o.has_donations AND o.status IN ('Completed', 'PartiallyRefunded') AND o.donation_net_minor > 0`

// inScope keeps the portfolio's contacts; a null array is the tenant.
const inScope = `($9::bigint[] IS NULL OR o.contact_id = ANY($9::bigint[]))`

// figuresSQL reads each period's gifts once (three range scans of the
// covering index orders_report_gifts) and answers, one row each: totals
// per period and currency ('amount'), per day of the period in the
// tenant's currency ('day'), donors per period, retained donors (a donor
// of the period before it too), and new donors: the contacts whose first
// gift in any currency (their lifetime rows, kept by orders) falls in
// the period — a range of the index contact_giving_first_any, each
// contact counted once, at its earliest currency.
var figuresSQL = `WITH g AS (
	SELECT 0 AS p, o.contact_id, o.currency, o.donation_net_minor AS net, o.created_at FROM orders.report_orders_v1 o
	WHERE o.tenant_id = $1 AND o.created_at >= $3 AND o.created_at < $4 AND ` + counted + ` AND ` + inScope + `
	UNION ALL
	SELECT 1, o.contact_id, o.currency, o.donation_net_minor, o.created_at FROM orders.report_orders_v1 o
	WHERE o.tenant_id = $1 AND o.created_at >= $5 AND o.created_at < $6 AND ` + counted + ` AND ` + inScope + `
	UNION ALL
	SELECT 2, o.contact_id, o.currency, 0, o.created_at FROM orders.report_orders_v1 o
	WHERE o.tenant_id = $1 AND o.created_at >= $7 AND o.created_at < $8 AND ` + counted + ` AND ` + inScope + `
), d AS (
	SELECT DISTINCT p, contact_id FROM g
)
SELECT 'amount', p, currency, sum(net)::bigint, count(*) FROM g WHERE p < 2 GROUP BY p, currency
UNION ALL
SELECT 'day', 0, to_char(g.created_at AT TIME ZONE $10, 'YYYY-MM-DD'), sum(net)::bigint, count(*) FROM g
WHERE p = 0 AND currency = $2 GROUP BY 3
UNION ALL
SELECT 'donors', p, '', count(*), 0 FROM d GROUP BY p
UNION ALL
SELECT 'retained', a.p, '', count(*), 0 FROM d a JOIN d b ON b.contact_id = a.contact_id AND b.p = a.p + 1
WHERE a.p < 2 GROUP BY a.p
UNION ALL
` + newDonorsSQL("$3", "$4", "$5", "$6")

// Figures reads the figures of q: the gifts' statement, the funds' and
// the schedules' run at once, each on a connection of its own, so a
// dashboard takes as long as its longest statement, not their sum.
func (s *Store) Figures(ctx context.Context, q Query) (Raw, error) {
	raw := Raw{Amounts: [2]map[string]Totals{{}, {}}, Days: map[string]Totals{}}
	cs, ce := q.Current.Bounds(q.Location)
	var (
		wg               sync.WaitGroup
		errFunds, errRec error
	)
	// Tallies have no contacts: a portfolio reads its rows or gifts.
	tallies := q.Contacts == nil && hourAligned(q)
	wg.Go(func() { raw.Funds, errFunds = s.funds(ctx, q, tallies, cs, ce) })
	wg.Go(func() { raw.Recurring, errRec = s.recurring(ctx, q) })
	err := s.gifts(ctx, q, tallies, &raw)
	wg.Wait()
	return raw, errors.Join(err, errFunds, errRec)
}

// gifts reads the figures into raw's amounts, days and donor counts:
// when orders kept its period rows in q's calendar (compared in the
// statement's own snapshot), from its tallies when tallies says they
// serve q (the whole tenant, every day on a whole UTC hour: talliesSQL)
// or from the period rows (periodFiguresSQL); else from the gifts
// (figuresSQL).
func (s *Store) gifts(ctx context.Context, q Query, tallies bool, raw *Raw) error {
	cs, ce := q.Current.Bounds(q.Location)
	ps, pe := q.Previous.Bounds(q.Location)
	es, ee := q.Earlier.Bounds(q.Location)
	tx, err := s.readTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	kept, err := periodsKept(ctx, tx, q)
	if err != nil {
		return err
	}
	sql, args := figuresSQL, []any{q.Tenant, q.Currency, cs, ce, ps, pe, es, ee, q.Contacts, q.Location.String()}
	if kept {
		sql, args = periodFiguresSQL, []any{q.Tenant, q.Currency, q.Current.From, q.Previous.From, q.Earlier.From,
			periodKinds[q.Kind], cs, ce, q.Contacts, q.Location.String(), ps, pe}
		if tallies {
			sql = talliesSQL
		}
	}
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("dashboard: figures: %w", err)
	}
	// Only the fields this statement answers are touched: funds and
	// recurring are being read into raw at the same time.
	g := Raw{Amounts: [2]map[string]Totals{{}, {}}, Days: map[string]Totals{}}
	if err := scanFigures(rows, &g); err != nil {
		return fmt.Errorf("dashboard: figures: %w", err)
	}
	raw.Amounts, raw.Days, raw.Donors, raw.New, raw.Retained = g.Amounts, g.Days, g.Donors, g.New, g.Retained
	return nil
}

// periodsKept reports whether orders keeps the tenant's period rows in
// q's calendar (its zone and fiscal year start, as orders copied them
// from the tenant settings: docs/cohorts.md, "Local periods").
func periodsKept(ctx context.Context, tx pgx.Tx, q Query) (bool, error) {
	if periodKinds[q.Kind] == "" || q.Location == nil {
		return false, nil
	}
	var kept bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders.report_giving_rolling_v1
		WHERE tenant_id = $1 AND time_zone = $2 AND fiscal_year_start = $3)`, q.Tenant, q.Location.String(), int(q.FiscalYearStart)).Scan(&kept)
	if err != nil {
		return false, fmt.Errorf("dashboard: period rows' calendar: %w", err)
	}
	return kept, nil
}

// periodFiguresSQL answers what figuresSQL does from orders' rows per
// contact and local period ($6: 'm', 'q' or 'y'; $3-$5 the periods'
// first days), read from their primary key alone: a period's totals are
// its rows' sums; its donors its distinct contacts, and the retained ones
// those of the period a year earlier too, counted in one merge of the
// three periods in contact order. The days of the current period
// ($7-$8) still read its gifts, and new donors the lifetime rows
// (newDonorsSQL).
var periodFiguresSQL = `SELECT 'amount', per.p, r.currency, sum(r.net_minor)::bigint, sum(r.gift_count)::bigint
FROM (VALUES (0, $3::date), (1, $4::date)) per(p, d)
JOIN orders.report_contact_giving_periods_v1 r ON r.tenant_id = $1 AND r.kind = $6::"char" AND r.period = per.d
WHERE ` + periodScope + `
GROUP BY per.p, r.currency
UNION ALL
SELECT 'day', 0, to_char(o.created_at AT TIME ZONE $10, 'YYYY-MM-DD'), sum(o.donation_net_minor)::bigint, count(*)
FROM orders.report_orders_v1 o
WHERE o.tenant_id = $1 AND o.created_at >= $7 AND o.created_at < $8 AND o.currency = $2 AND ` + counted + ` AND ` + inScope + `
GROUP BY 3
UNION ALL
SELECT x.k, x.p, '', x.n, 0 FROM (
	SELECT count(a.contact_id) AS d0, count(b.contact_id) AS d1, count(c.contact_id) AS d2,
	       count(a.contact_id + b.contact_id) AS r0, count(b.contact_id + c.contact_id) AS r1
	FROM (SELECT DISTINCT contact_id FROM orders.report_contact_giving_periods_v1 r
	      WHERE r.tenant_id = $1 AND r.kind = $6::"char" AND r.period = $3 AND ` + periodScope + `) a
	FULL JOIN (SELECT DISTINCT contact_id FROM orders.report_contact_giving_periods_v1 r
	      WHERE r.tenant_id = $1 AND r.kind = $6::"char" AND r.period = $4 AND ` + periodScope + `) b ON b.contact_id = a.contact_id
	FULL JOIN (SELECT DISTINCT contact_id FROM orders.report_contact_giving_periods_v1 r
	      WHERE r.tenant_id = $1 AND r.kind = $6::"char" AND r.period = $5 AND ` + periodScope + `) c
	      ON c.contact_id = coalesce(b.contact_id, a.contact_id)
) s CROSS JOIN LATERAL (VALUES ('donors', 0, s.d0), ('donors', 1, s.d1), ('donors', 2, s.d2), ('retained', 0, s.r0), ('retained', 1, s.r1)) x(k, p, n)
UNION ALL
` + newDonorsSQL("$7", "$8", "$11", "$12")

// talliesSQL answers periodFiguresSQL for the whole tenant from orders'
// tallies (docs/dashboard.md, "Tallies"): totals and days from the hours
// of the current and previous periods ($7-$8, $11-$12); donors, retained
// and new donors from the periods' donor tallies.
const talliesSQL = `SELECT 'amount', per.p, h.currency, sum(h.net_minor)::bigint, sum(h.gifts)::bigint
FROM (VALUES (0, $7::timestamptz, $8::timestamptz), (1, $11::timestamptz, $12::timestamptz)) per(p, s, e)
JOIN orders.report_giving_hours_v1 h ON h.tenant_id = $1 AND h.hour >= per.s AND h.hour < per.e AND h.fund_id = '` + allFunds + `'
GROUP BY per.p, h.currency HAVING sum(h.gifts) <> 0 OR sum(h.net_minor) <> 0
UNION ALL
SELECT 'day', 0, to_char(h.hour AT TIME ZONE $10, 'YYYY-MM-DD'), sum(h.net_minor)::bigint, sum(h.gifts)::bigint
FROM orders.report_giving_hours_v1 h
WHERE h.tenant_id = $1 AND h.hour >= $7 AND h.hour < $8 AND h.currency = $2 AND h.fund_id = '` + allFunds + `'
GROUP BY 3
UNION ALL
SELECT x.k, per.p, '', x.n, 0
FROM (VALUES (0, $3::date), (1, $4::date), (2, $5::date)) per(p, d)
CROSS JOIN LATERAL (SELECT coalesce(sum(t.donors), 0)::bigint AS donors, coalesce(sum(t.retained), 0)::bigint AS retained,
                           coalesce(sum(t.new), 0)::bigint AS new
                    FROM orders.report_giving_donors_v1 t WHERE t.tenant_id = $1 AND t.kind = $6::"char" AND t.period = per.d) t
CROSS JOIN LATERAL (VALUES ('donors', t.donors), ('retained', t.retained), ('new', t.new)) x(k, n)
WHERE (x.k = 'donors' OR per.p < 2) AND $9::bigint[] IS NULL`

// hourAligned reports whether every day of q's current period, and the
// previous period, starts on a whole UTC hour in q's zone: then the hour
// tallies add up to its days exactly (true of every zone whose offsets
// are whole hours; India's, Newfoundland's or Nepal's are not).
func hourAligned(q Query) bool {
	if q.Location == nil {
		return false
	}
	whole := func(t time.Time) bool { return t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 }
	ps, pe := q.Previous.Bounds(q.Location)
	if !whole(ps.UTC()) || !whole(pe.UTC()) {
		return false
	}
	for _, d := range append(q.Current.Days(), q.Current.To.AddDate(0, 0, 1)) {
		if !whole(time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, q.Location).UTC()) {
			return false
		}
	}
	return true
}

// newDonorsSQL counts each period's new donors, the current period
// [cs, ce) and the previous [ps, pe) given as parameters: the lifetime
// rows whose first gift falls in the period (a range of the index
// contact_giving_first_any) and is the contact's first in any currency,
// each candidate probing its own other currencies' rows (a NOT EXISTS
// there was planned as a hash of every lifetime row of the tenant, 210
// ms of a month at a million contacts).
func newDonorsSQL(cs, ce, ps, pe string) string {
	return `SELECT 'new', per.p, '', count(*), 0
FROM (VALUES (0, ` + cs + `::timestamptz, ` + ce + `::timestamptz), (1, ` + ps + `::timestamptz, ` + pe + `::timestamptz)) per(p, s, e)
JOIN orders.report_contact_giving_v1 l ON l.tenant_id = $1 AND l.first_at >= per.s AND l.first_at < per.e
WHERE ($9::bigint[] IS NULL OR l.contact_id = ANY($9::bigint[]))
  AND (l.first_at, l.currency) = (SELECT o.first_at, o.currency FROM orders.report_contact_giving_v1 o
                                  WHERE o.tenant_id = $1 AND o.contact_id = l.contact_id ORDER BY o.first_at, o.currency LIMIT 1)
GROUP BY per.p`
}

// periodScope keeps the portfolio's period rows r; a null array is the
// tenant.
const periodScope = `($9::bigint[] IS NULL OR r.contact_id = ANY($9::bigint[]))`

// scanFigures reads figuresSQL's rows into raw.
func scanFigures(rows pgx.Rows, raw *Raw) error {
	var (
		kind, key string
		p         int
		sum, n    int64
	)
	_, err := pgx.ForEachRow(rows, []any{&kind, &p, &key, &sum, &n}, func() error {
		switch kind {
		case "amount":
			raw.Amounts[p][key] = Totals{Minor: sum, Gifts: n}
		case "day":
			raw.Days[key] = Totals{Minor: sum, Gifts: n}
		case "donors":
			raw.Donors[p] = sum
		case "retained":
			raw.Retained[p] = sum
		case "new":
			raw.New[p] = sum
		}
		return nil
	})
	return err
}

// readTx is a read-only transaction with the reports' settings for one
// large statement: room to hash and sort a period's donor sets in memory
// (on the 4 MB default they spilled to disk at 60,000 gifts a period) and
// no JIT, whose compilation cost more than it saved (docs/dashboard.md,
// Measured).
func (s *Store) readTx(ctx context.Context) (pgx.Tx, error) {
	// Repeatable read: the period rows' calendar and the rows are read
	// in one snapshot.
	tx, err := s.reads.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT set_config('work_mem', '64MB', true), set_config('jit', 'off', true)`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: begin: %w", err)
	}
	return tx, nil
}

// fundsSQL is the period's net giving per fund in the tenant's currency
// from its gifts' lines, each fund under its name as it stands; funds
// whose lines were refunded in full are left out.
const fundsSQL = `SELECT o.fund_id::text, coalesce(min(f.name), ''), sum(o.net_amount_minor)::bigint
FROM orders.report_donations_v1 o
LEFT JOIN orders.report_funds_v1 f ON f.tenant_id = o.tenant_id AND f.fund_id = o.fund_id
WHERE o.tenant_id = $1 AND o.currency = $2 AND o.created_at >= $3 AND o.created_at < $4
  AND o.status IN ('Completed', 'PartiallyRefunded') AND ($5::bigint[] IS NULL OR o.contact_id = ANY($5::bigint[]))
GROUP BY o.fund_id HAVING sum(o.net_amount_minor) <> 0 ORDER BY 3 DESC, 1`

// fundTalliesSQL is fundsSQL from orders' hour tallies (the tenant's
// alone: tallies have no contacts).
const fundTalliesSQL = `SELECT h.fund_id::text, coalesce(min(f.name), ''), sum(h.net_minor)::bigint
FROM orders.report_giving_hours_v1 h
LEFT JOIN orders.report_funds_v1 f ON f.tenant_id = h.tenant_id AND f.fund_id = h.fund_id
WHERE h.tenant_id = $1 AND h.currency = $2 AND h.hour >= $3 AND h.hour < $4 AND h.fund_id <> '` + allFunds + `'
  AND $5::bigint[] IS NULL
GROUP BY h.fund_id HAVING sum(h.net_minor) <> 0 ORDER BY 3 DESC, 1`

// allFunds is the fund_id of an hour tally's all-funds row.
const allFunds = "00000000-0000-0000-0000-000000000000"

func (s *Store) funds(ctx context.Context, q Query, tallies bool, start, end time.Time) ([]Fund, error) {
	sql := fundsSQL
	if tallies {
		sql = fundTalliesSQL
	}
	var out []Fund
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		rows, _ := p.Query(ctx, sql, q.Tenant, q.Currency, start, end, q.Contacts)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Fund, error) {
			var f Fund
			err := r.Scan(&f.ID, &f.Name, &f.Minor)
			return f, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: funds: %w", err)
	}
	return out, nil
}

// recurringSQL counts active and past-due schedules, and brings the
// active ones in the tenant's currency to a month, rounded once.
const recurringSQL = `SELECT count(*) FILTER (WHERE o.status = 'active'), count(*) FILTER (WHERE o.status = 'past_due'),
	coalesce(round(sum(CASE o.frequency WHEN 'weekly' THEN o.amount_minor * 52 / 12.0 WHEN 'monthly' THEN o.amount_minor
		WHEN 'quarterly' THEN o.amount_minor / 3.0 WHEN 'annually' THEN o.amount_minor / 12.0 END)
		FILTER (WHERE o.status = 'active' AND o.currency = $2)), 0)::bigint
FROM orders.report_schedules_v1 o
WHERE o.tenant_id = $1 AND ($3::bigint[] IS NULL OR o.contact_id = ANY($3::bigint[]))`

func (s *Store) recurring(ctx context.Context, q Query) (Recurring, error) {
	var r Recurring
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		return p.QueryRow(ctx, recurringSQL, q.Tenant, q.Currency, q.Contacts).Scan(&r.Active, &r.PastDue, &r.MonthlyMinor)
	})
	if err != nil {
		return r, fmt.Errorf("dashboard: recurring: %w", err)
	}
	return r, nil
}

// Portfolio reads the contacts assigned to user, the only ones its
// dashboard counts.
func (s *Store) Portfolio(ctx context.Context, tenant, user uuid.UUID) ([]int64, error) {
	var ids []int64
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		rows, _ := p.Query(ctx, `SELECT contact_id FROM contacts.report_contact_assignments_v1
			WHERE tenant_id = $1 AND assigned_user_id = $2 ORDER BY contact_id`, tenant, user)
		var err error
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: portfolio of %s: %w", user, err)
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}

// Worklist is what a fundraiser works through: the portfolio's gifts not
// yet thanked, its lapsed donors and its schedules past due.
type Worklist struct {
	PendingAcknowledgements, Lapsed int64
}

// worklistSQL counts the portfolio's pending gifts (those of contacts who
// asked for no acknowledgement left out: no letter run thanks them) and
// its contacts who gave before $3 and not since (their lifetime rows: a
// last gift before $3 in every currency).
const worklistSQL = `SELECT
	(SELECT count(*) FROM orders.report_acknowledgements_v1 a
	 LEFT JOIN contacts.report_contact_preferences_v1 p ON p.tenant_id = a.tenant_id AND p.contact_id = a.contact_id
	 WHERE a.tenant_id = $1 AND a.contact_id = ANY($2::bigint[]) AND a.acknowledgement_status = 'pending'
	   AND a.status IN ('Completed', 'PartiallyRefunded') AND NOT coalesce(p.do_not_acknowledge, false)),
	(SELECT count(*) FROM (SELECT l.contact_id FROM orders.report_contact_giving_v1 l
	 WHERE l.tenant_id = $1 AND l.contact_id = ANY($2::bigint[]) GROUP BY l.contact_id HAVING max(l.last_at) < $3) lapsed)`

// Worklist reads the portfolio's work list; lapsedBefore is the instant
// 18 months before today began.
func (s *Store) Worklist(ctx context.Context, tenant uuid.UUID, contacts []int64, lapsedBefore time.Time) (Worklist, error) {
	var w Worklist
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		return p.QueryRow(ctx, worklistSQL, tenant, contacts, lapsedBefore).Scan(&w.PendingAcknowledgements, &w.Lapsed)
	})
	if err != nil {
		return w, fmt.Errorf("dashboard: work list: %w", err)
	}
	return w, nil
}
