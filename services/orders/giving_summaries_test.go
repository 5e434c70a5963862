package orders

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/store"
)

// givingFixture writes orders straight into the tables, as any code path
// of the service does, so the giving triggers see every kind of
// transaction: several events on one gift, adds after a rebuild of the
// same month, moves across contacts and months.
type givingFixture struct {
	pool          *pgxpool.Pool
	tenant, batch uuid.UUID
	funds         [2]uuid.UUID
	number        int64
	mu            sync.Mutex
}

func newGivingFixture(t *testing.T) *givingFixture {
	t.Helper()
	f := &givingFixture{pool: testPool(t), tenant: uuid.Must(uuid.NewV7()), batch: uuid.Must(uuid.NewV7())}
	f.funds = [2]uuid.UUID{uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())}
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'Giving')`, f.tenant, f.batch); err != nil {
		t.Fatal(err)
	}
	for i, id := range f.funds {
		if _, err := f.pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, $3)`, f.tenant, id, fmt.Sprint("Fund ", i)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// gift is an order with a donation line per fund (amounts in minor units;
// a zero amount writes no line).
type gift struct {
	contact  int64
	status   string
	currency string
	at       time.Time
	lines    [2]int64
}

// calendar sets the tenant's calendar copy (orders 00027), from which on
// its period rows are kept.
func (f *givingFixture) calendar(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, zone string, fiscalYearStart int) error {
	_, err := q.Exec(ctx, `SELECT orders.set_giving_calendar($1, $2, $3::smallint)`, f.tenant, zone, fiscalYearStart)
	return err
}

// insert writes g in tx and returns its id.
func (f *givingFixture) insert(ctx context.Context, tx pgx.Tx, g gift) (uuid.UUID, error) {
	return f.insertFrom(ctx, tx, g, nil)
}

// insertFrom writes g as written by the import importID (nil: none),
// which the insert trigger leaves to orders.add_imported_gifts.
func (f *givingFixture) insertFrom(ctx context.Context, tx pgx.Tx, g gift, importID *uuid.UUID) (uuid.UUID, error) {
	f.mu.Lock()
	f.number++
	n := f.number
	f.mu.Unlock()
	id := uuid.Must(uuid.NewV7())
	total := g.lines[0] + g.lines[1]
	if _, err := tx.Exec(ctx, `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency,
		donation_subtotal_minor, item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, created_at, import_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $7, $7, true, false, $8, $9, $10)`,
		f.tenant, id, n, g.contact, g.status, g.currency, total, f.batch, g.at, importID); err != nil {
		return id, err
	}
	for i, amount := range g.lines {
		if amount == 0 {
			continue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
			VALUES ($1, $2, $3, $4, $5, 'Fund', $6, true)`, f.tenant, id, uuid.Must(uuid.NewV7()), i, f.funds[i], amount); err != nil {
			return id, err
		}
	}
	return id, nil
}

// refund takes minor units off the gift's first line.
func (f *givingFixture) refund(ctx context.Context, tx pgx.Tx, id uuid.UUID, minor int64, status string) error {
	if _, err := tx.Exec(ctx, `UPDATE orders.order_donations SET refunded_minor = refunded_minor + $3
		WHERE tenant_id = $1 AND order_id = $2 AND position = 0`, f.tenant, id, minor); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE orders.orders SET donation_refunded_minor = donation_refunded_minor + $3,
		refunded_minor = refunded_minor + $3, status = $4 WHERE tenant_id = $1 AND id = $2`, f.tenant, id, minor, status)
	return err
}

func (f *givingFixture) set(ctx context.Context, tx pgx.Tx, id uuid.UUID, assignments string, args ...any) error {
	_, err := tx.Exec(ctx, `UPDATE orders.orders SET `+assignments+` WHERE tenant_id = $1 AND id = $2`,
		append([]any{f.tenant, id}, args...)...)
	return err
}

// rollingFrom is the tenant's rolling window's start.
func (f *givingFixture) rollingFrom(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	var from time.Time
	err := tx.QueryRow(ctx, `SELECT from_at FROM orders.giving_rolling WHERE tenant_id = $1`, f.tenant).Scan(&from)
	return from, err
}

// withCalendar holds when the tenant has a calendar copy.
const withCalendar = `EXISTS (SELECT 1 FROM orders.giving_rolling r WHERE r.tenant_id = $1 AND r.time_zone IS NOT NULL)`

// summaries prints the tenant's month and lifetime rows, sorted.
func (f *givingFixture) summaries(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (string, error) {
	var b strings.Builder
	for _, sql := range []string{
		`SELECT fund_id::text, month::text, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
		 FROM orders.contact_giving_months WHERE tenant_id = $1 ORDER BY 1, 2, 3, 4`,
		`SELECT 'lifetime', '', contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at, recent_minor, recent_count
		 FROM orders.contact_giving WHERE tenant_id = $1 ORDER BY 3, 4`,
		`SELECT 'rolling', from_at, time_zone, fiscal_year_start FROM orders.giving_rolling WHERE tenant_id = $1`,
		// The period rows and donor tallies mean something only under a
		// calendar copy (a bulk import drops it and leaves them be).
		`SELECT kind::text, period::text, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
		 FROM orders.contact_giving_periods WHERE tenant_id = $1 AND ` + withCalendar + ` ORDER BY 1, 2, 3, 4`,
		// The tallies (00028) as a reader sums them, new rows and
		// compacted ones alike.
		`SELECT 'hour', hour, currency, fund_id::text, sum(gifts), sum(net_minor) FROM orders.giving_hour_tallies
		 WHERE tenant_id = $1 GROUP BY 2, 3, 4 HAVING sum(gifts) <> 0 OR sum(net_minor) <> 0 ORDER BY 2, 3, 4`,
		`SELECT 'donors', kind::text, period::text, sum(donors), sum(retained), sum(new) FROM orders.giving_donor_tallies
		 WHERE tenant_id = $1 AND ` + withCalendar + ` GROUP BY 2, 3 HAVING sum(donors) <> 0 OR sum(retained) <> 0 OR sum(new) <> 0 ORDER BY 2, 3`,
	} {
		rows, err := q.Query(ctx, sql, f.tenant)
		if err != nil {
			return "", err
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return "", err
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// checkAgainstRebuild compares the summaries the triggers kept with those
// rebuild_contact_giving computes from the orders (then rolled back).
func (f *givingFixture) checkAgainstRebuild(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	kept, err := f.summaries(ctx, f.pool)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT orders.rebuild_contact_giving($1)`, f.tenant); err != nil {
		t.Fatal(err)
	}
	want, err := f.summaries(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	if kept != want {
		t.Fatalf("the summaries kept by the triggers differ from a rebuild\nkept:\n%s\nrebuilt:\n%s", kept, want)
	}
}

// TestGivingSummariesMatchARebuild runs transactions of every shape the
// service writes, each followed by the check that the summaries equal a
// rebuild from the orders: adds, rebuilds, and both in one transaction.
func TestGivingSummariesMatchARebuild(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	now := time.Now().UTC().Truncate(time.Second)
	lastMonth := now.AddDate(0, -1, 0)
	kept := map[string]uuid.UUID{} // gifts later steps change
	if err := f.calendar(context.Background(), f.pool, "America/Los_Angeles", 7); err != nil {
		t.Fatal(err)
	}
	// 23:30 on 30 June in Los Angeles is 06:30 on 1 July in UTC: the
	// local month, quarter and fiscal year (July) all end between them.
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	yearEnd := time.Date(2025, 6, 30, 23, 30, 0, 0, la)
	steps := []struct {
		name string
		run  func(ctx context.Context, tx pgx.Tx) error
	}{
		{"a gift to two funds", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{1, "Completed", "USD", now, [2]int64{1000, 500}})
			kept["first"] = id
			return err
		}},
		{"three gifts of one contact in one transaction, the first refunded between them", func(ctx context.Context, tx pgx.Tx) error {
			a, err := f.insert(ctx, tx, gift{1, "Completed", "USD", now.Add(time.Second), [2]int64{2000, 0}})
			if err != nil {
				return err
			}
			if _, err := f.insert(ctx, tx, gift{1, "Completed", "USD", now.Add(2 * time.Second), [2]int64{300, 300}}); err != nil {
				return err
			}
			if err := f.refund(ctx, tx, a, 700, "PartiallyRefunded"); err != nil {
				return err
			}
			// Added after the month was rebuilt in this transaction.
			_, err = f.insert(ctx, tx, gift{1, "Completed", "USD", now.Add(3 * time.Second), [2]int64{0, 4000}})
			return err
		}},
		{"pending, then completed", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{2, "Pending", "USD", now, [2]int64{2500, 0}})
			if err != nil {
				return err
			}
			return f.set(ctx, tx, id, `status = 'Completed'`)
		}},
		{"completed, voided and completed again", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{2, "Completed", "USD", now, [2]int64{900, 100}})
			if err != nil {
				return err
			}
			if err := f.set(ctx, tx, id, `status = 'Voided'`); err != nil {
				return err
			}
			return f.set(ctx, tx, id, `status = 'Completed'`)
		}},
		{"pending, completed, then voided", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{2, "Pending", "USD", now, [2]int64{4200, 0}})
			if err != nil {
				return err
			}
			if err := f.set(ctx, tx, id, `status = 'Completed'`); err != nil {
				return err
			}
			return f.set(ctx, tx, id, `status = 'Voided'`)
		}},
		{"a standing gift moved to another contact and month", func(ctx context.Context, tx pgx.Tx) error {
			return f.set(ctx, tx, kept["first"], `contact_id = 3, created_at = $3`, lastMonth)
		}},
		{"a pending gift moved, then completed", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{4, "Pending", "EUR", now, [2]int64{800, 0}})
			if err != nil {
				return err
			}
			if err := f.set(ctx, tx, id, `contact_id = 5, created_at = $3`, lastMonth); err != nil {
				return err
			}
			return f.set(ctx, tx, id, `status = 'Completed'`)
		}},
		{"imported gifts across months and currencies", func(ctx context.Context, tx pgx.Tx) error {
			for i := range 12 {
				cur := "USD"
				if i%3 == 0 {
					cur = "EUR"
				}
				if _, err := f.insert(ctx, tx, gift{int64(6 + i%2), "Completed", cur, now.AddDate(0, -i, 0), [2]int64{int64(100 * (i + 1)), int64(10 * i)}}); err != nil {
					return err
				}
			}
			return nil
		}},
		{"a gift refunded in full, and one whose only fund is refunded", func(ctx context.Context, tx pgx.Tx) error {
			a, err := f.insert(ctx, tx, gift{6, "Completed", "USD", now, [2]int64{600, 0}})
			if err != nil {
				return err
			}
			if err := f.refund(ctx, tx, a, 600, "Refunded"); err != nil {
				return err
			}
			b, err := f.insert(ctx, tx, gift{7, "Completed", "USD", now, [2]int64{50, 950}})
			if err != nil {
				return err
			}
			return f.refund(ctx, tx, b, 50, "PartiallyRefunded")
		}},
		{"a currency corrected", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{8, "Completed", "USD", now, [2]int64{1234, 0}})
			if err != nil {
				return err
			}
			return f.set(ctx, tx, id, `currency = 'CAD'`)
		}},
		{"gifts on both sides of the rolling window's start", func(ctx context.Context, tx pgx.Tx) error {
			from, err := f.rollingFrom(ctx, tx)
			if err != nil {
				return err
			}
			for i, at := range []time.Time{from.Add(-time.Second), from, from.Add(36 * time.Hour), from.AddDate(0, 0, 40), from.AddDate(-1, 0, 0)} {
				id, err := f.insert(ctx, tx, gift{9, "Completed", "USD", at, [2]int64{int64(1000 * (i + 1)), 0}})
				if err != nil {
					return err
				}
				kept[fmt.Sprint("edge", i)] = id
			}
			return nil
		}},
		{"the rolling window moved forward past some of them", func(ctx context.Context, tx pgx.Tx) error {
			from, err := f.rollingFrom(ctx, tx)
			if err != nil {
				return err
			}
			var moved bool
			if err := tx.QueryRow(ctx, `SELECT orders.advance_giving_rolling($1, $2)`, f.tenant, from.AddDate(0, 0, 2)).Scan(&moved); err != nil {
				return err
			}
			if !moved {
				return fmt.Errorf("the window did not move from %s", from)
			}
			return nil
		}},
		{"gifts inside and outside the moved window refunded", func(ctx context.Context, tx pgx.Tx) error {
			if err := f.refund(ctx, tx, kept["edge3"], 1500, "PartiallyRefunded"); err != nil {
				return err
			}
			return f.refund(ctx, tx, kept["edge1"], 2000, "Refunded")
		}},
		{"gifts on both sides of the local fiscal year's end", func(ctx context.Context, tx pgx.Tx) error {
			for i, at := range []time.Time{yearEnd.Add(-time.Hour), yearEnd, yearEnd.Add(time.Hour), yearEnd.AddDate(0, 0, -45)} {
				id, err := f.insert(ctx, tx, gift{10, "Completed", "USD", at, [2]int64{int64(100 * (i + 1)), 25}})
				if err != nil {
					return err
				}
				kept[fmt.Sprint("year", i)] = id
			}
			return nil
		}},
		{"a gift moved an hour, within its UTC month, into the next local year", func(ctx context.Context, tx pgx.Tx) error {
			return f.set(ctx, tx, kept["year1"], `created_at = $3`, yearEnd.Add(2*time.Hour))
		}},
		{"a refund in the quarter, then a gift added to its month", func(ctx context.Context, tx pgx.Tx) error {
			if err := f.refund(ctx, tx, kept["year3"], 200, "Refunded"); err != nil {
				return err
			}
			_, err := f.insert(ctx, tx, gift{10, "Completed", "USD", yearEnd.AddDate(0, 0, -44), [2]int64{70, 0}})
			return err
		}},
		{"an imported batch across local months", func(ctx context.Context, tx pgx.Tx) error {
			ids := make([]uuid.UUID, 0, 6)
			for i := range 6 {
				id, err := f.insertFrom(ctx, tx, gift{int64(11 + i%2), "Completed", "USD", yearEnd.Add(time.Duration(i-3) * 7 * time.Hour), [2]int64{int64(10 * (i + 1)), 0}}, &f.batch)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			// An older gift of a contact who gave later: its first
			// period moves earlier.
			id, err := f.insertFrom(ctx, tx, gift{10, "Completed", "USD", yearEnd.AddDate(-2, 0, 0), [2]int64{15, 0}}, &f.batch)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `SELECT orders.add_imported_gifts($1, $2)`, f.tenant, append(ids, id))
			return err
		}},
		{"the tallies compacted", func(ctx context.Context, tx pgx.Tx) error {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT orders.compact_giving_tallies()`).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("no new tally rows to compact")
			}
			return nil
		}},
		{"an older gift recorded, then voided", func(ctx context.Context, tx pgx.Tx) error {
			id, err := f.insert(ctx, tx, gift{12, "Completed", "USD", yearEnd.AddDate(-3, 0, 0), [2]int64{35, 0}})
			kept["oldest"] = id
			return err
		}},
		{"the older gift voided", func(ctx context.Context, tx pgx.Tx) error {
			return f.set(ctx, tx, kept["oldest"], `status = 'Voided'`)
		}},
		{"a gift a year after another of its contact's, and one refunded after compaction", func(ctx context.Context, tx pgx.Tx) error {
			if _, err := f.insert(ctx, tx, gift{10, "Completed", "USD", yearEnd.AddDate(1, 0, 0), [2]int64{90, 0}}); err != nil {
				return err
			}
			return f.refund(ctx, tx, kept["year0"], 100, "Refunded")
		}},
		{"a bulk import batch suspends the period rows", func(ctx context.Context, tx pgx.Tx) error {
			var bulk int
			if err := tx.QueryRow(ctx, `SELECT orders.bulk_import_gifts()`).Scan(&bulk); err != nil {
				return err
			}
			ids := make([]uuid.UUID, 0, bulk)
			for i := range bulk {
				id, err := f.insertFrom(ctx, tx, gift{int64(20 + i%50), "Completed", "USD", yearEnd.Add(time.Duration(i) * time.Hour), [2]int64{int64(100 + i), 0}}, &f.batch)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			if _, err := tx.Exec(ctx, `SELECT orders.add_imported_gifts($1, $2)`, f.tenant, ids); err != nil {
				return err
			}
			var suspended bool
			if err := tx.QueryRow(ctx, `SELECT time_zone IS NULL AND periods_resume_at > now() FROM orders.giving_rolling WHERE tenant_id = $1`,
				f.tenant).Scan(&suspended); err != nil {
				return err
			}
			if !suspended {
				return fmt.Errorf("a batch of %d gifts left the calendar copy in place", bulk)
			}
			// A live gift while suspended keeps no period rows.
			_, err := f.insert(ctx, tx, gift{20, "Completed", "USD", yearEnd, [2]int64{42, 0}})
			return err
		}},
		{"the calendar changed: another zone and an April fiscal year", func(ctx context.Context, tx pgx.Tx) error {
			return f.calendar(ctx, tx, "Asia/Kolkata", 4)
		}},
		{"a gift and a void under the new calendar", func(ctx context.Context, tx pgx.Tx) error {
			if _, err := f.insert(ctx, tx, gift{10, "Completed", "EUR", yearEnd, [2]int64{555, 0}}); err != nil {
				return err
			}
			return f.set(ctx, tx, kept["year2"], `status = 'Voided'`)
		}},
	}
	ctx := context.Background()
	for _, s := range steps {
		err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error { return s.run(ctx, tx) })
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		t.Run(s.name, f.checkAgainstRebuild)
	}
}

// TestGivingSummariesConcurrentGifts records one contact's gifts from
// several connections at once: the adds serialize on the contact and
// none is lost.
func TestGivingSummariesConcurrentGifts(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	ctx := context.Background()
	if err := f.calendar(ctx, f.pool, "America/New_York", 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				g := gift{1, "Completed", "USD", now.Add(time.Duration(w*100+i) * time.Millisecond), [2]int64{int64(100 + i), int64(w)}}
				if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error { _, err := f.insert(ctx, tx, g); return err }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int64
	if err := f.pool.QueryRow(ctx, `SELECT gift_count FROM orders.contact_giving WHERE tenant_id = $1 AND contact_id = 1`, f.tenant).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 100 {
		t.Errorf("lifetime gift count %d, want 100", n)
	}
	f.checkAgainstRebuild(t)
}

// TestGivingRollingMovesWhileGiftsAreRecorded moves a tenant's rolling
// window forward an hour at a time while gifts dated around its start are
// recorded from several connections: each gift is in a contact's recent
// figures exactly when it is in the window, whichever came first.
func TestGivingRollingMovesWhileGiftsAreRecorded(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	ctx := context.Background()
	if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		_, err := f.insert(ctx, tx, gift{1, "Completed", "USD", time.Now().UTC(), [2]int64{100, 0}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var from time.Time
	if err := f.pool.QueryRow(ctx, `SELECT from_at FROM orders.giving_rolling WHERE tenant_id = $1`, f.tenant).Scan(&from); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				at := from.Add(time.Duration(i)*time.Hour + time.Duration(w)*10*time.Minute)
				g := gift{int64(1 + i%3), "Completed", "USD", at, [2]int64{int64(100 + i), int64(w)}}
				if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error { _, err := f.insert(ctx, tx, g); return err }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for h := range 24 {
			if _, err := f.pool.Exec(ctx, `SELECT orders.advance_giving_rolling($1, $2)`, f.tenant, from.Add(time.Duration(h+1)*time.Hour)); err != nil {
				errs <- err
				return
			}
			time.Sleep(5 * time.Millisecond) // let gifts of the hour come in between moves
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var recent int64
	if err := f.pool.QueryRow(ctx, `SELECT sum(recent_count) FROM orders.contact_giving WHERE tenant_id = $1`, f.tenant).Scan(&recent); err != nil {
		t.Fatal(err)
	}
	var want int64
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND created_at >= $2`, f.tenant, from.Add(24*time.Hour)).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if recent != want {
		t.Errorf("recent gifts %d, want the %d gifts dated in the moved window", recent, want)
	}
	f.checkAgainstRebuild(t)
}

// TestAdvanceGivingWindows is the housekeeping's move: a tenant whose
// window starts before today's target moves to it, its gifts that left
// the window leave its contacts' recent figures, and a second pass leaves
// it where it is.
func TestAdvanceGivingWindows(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var target time.Time
	if err := f.pool.QueryRow(ctx, `SELECT orders.rolling_target($1)`, now).Scan(&target); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		// The window starts ten days early, as after a week without
		// housekeeping.
		if _, err := tx.Exec(ctx, `INSERT INTO orders.giving_rolling (tenant_id, from_at) VALUES ($1, $2)`, f.tenant, target.AddDate(0, 0, -10)); err != nil {
			return err
		}
		for _, at := range []time.Time{target.AddDate(0, 0, -5), target.Add(-time.Second), target, now} {
			if _, err := f.insert(ctx, tx, gift{1, "Completed", "USD", at, [2]int64{100, 0}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st := store.New(f.pool)
	for pass := range 2 {
		n, err := st.AdvanceGivingWindows(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if pass == 0 && n < 1 {
			t.Fatalf("the first pass moved %d windows, want at least this tenant's", n)
		}
	}
	var from time.Time
	var recent int64
	if err := f.pool.QueryRow(ctx, `SELECT r.from_at, c.recent_count FROM orders.giving_rolling r
		JOIN orders.contact_giving c ON c.tenant_id = r.tenant_id WHERE r.tenant_id = $1`, f.tenant).Scan(&from, &recent); err != nil {
		t.Fatal(err)
	}
	if !from.Equal(target) || recent != 2 {
		t.Errorf("window from %s with %d recent gifts, want from %s with 2 (the gifts at and after it)", from, recent, target)
	}
	f.checkAgainstRebuild(t)
}

// TestCompactGivingTallies: the housekeeping's fold leaves one row per
// key and the sums as they were, and a second fold finds nothing new.
func TestCompactGivingTallies(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	ctx := context.Background()
	if err := f.calendar(ctx, f.pool, "Europe/Paris", 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for i := range 6 {
		if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
			_, err := f.insert(ctx, tx, gift{int64(1 + i%2), "Completed", "USD", now.Add(-time.Duration(i) * time.Minute), [2]int64{100, int64(10 * i)}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := f.summaries(ctx, f.pool)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(f.pool)
	folded, err := st.CompactGivingTallies(ctx)
	if err != nil || folded < 6 {
		t.Fatalf("folded %d rows (%v), want at least this tenant's 6 gifts' worth", folded, err)
	}
	after, err := f.summaries(ctx, f.pool)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the sums moved in the fold\nbefore:\n%s\nafter:\n%s", before, after)
	}
	var fresh, keys, rows int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT compacted), count(DISTINCT (hour, currency, fund_id)), count(*)
		FROM orders.giving_hour_tallies WHERE tenant_id = $1`, f.tenant).Scan(&fresh, &keys, &rows); err != nil {
		t.Fatal(err)
	}
	if fresh != 0 || rows != keys {
		t.Errorf("%d new rows and %d rows for %d keys after the fold, want none new and one per key", fresh, rows, keys)
	}
	f.checkAgainstRebuild(t)
}

// TestHourTalliesFollowDeletes: no code path deletes a gift or a line
// today, but the hour tallies' triggers take deleted rows off as they
// add inserted ones, so that a future one cannot leave them wrong: after
// a line and a whole order are deleted, the tallies equal a rebuild.
func TestHourTalliesFollowDeletes(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	ctx := context.Background()
	at := time.Now().UTC()
	var a, b uuid.UUID
	if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		if a, err = f.insert(ctx, tx, gift{1, "Completed", "USD", at, [2]int64{300, 200}}); err != nil {
			return err
		}
		b, err = f.insert(ctx, tx, gift{2, "Completed", "USD", at.Add(-2 * time.Hour), [2]int64{700, 50}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		sql string
		id  uuid.UUID
	}{
		{`DELETE FROM orders.order_donations WHERE tenant_id = $1 AND order_id = $2 AND position = 1`, a},
		{`DELETE FROM orders.order_donations WHERE tenant_id = $1 AND order_id = $2`, b},
		{`DELETE FROM orders.orders WHERE tenant_id = $1 AND id = $2`, b},
	} {
		if _, err := f.pool.Exec(ctx, d.sql, f.tenant, d.id); err != nil {
			t.Fatalf("%v\n%s", err, d.sql)
		}
	}
	const tallies = `SELECT hour, currency, fund_id::text, sum(gifts), sum(net_minor) FROM orders.giving_hour_tallies
		WHERE tenant_id = $1 GROUP BY 1, 2, 3 HAVING sum(gifts) <> 0 OR sum(net_minor) <> 0 ORDER BY 1, 2, 3`
	read := func(q interface {
		Query(context.Context, string, ...any) (pgx.Rows, error)
	}) string {
		rows, err := q.Query(ctx, tallies, f.tenant)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&out, vals...)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		return out.String()
	}
	kept := read(f.pool)
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT orders.rebuild_giving_hours($1)`, f.tenant); err != nil {
		t.Fatal(err)
	}
	if want := read(tx); kept != want || strings.Count(want, "\n") != 2 {
		t.Errorf("hour tallies after the deletes\nkept:\n%s\nrebuilt (want the all-funds and first fund rows of the first gift):\n%s", kept, want)
	}
}

// TestGivingPeriodsBuiltInSteps changes the tenant's calendar as the
// housekeeping does (orders 00029): a build two contacts a step, with
// gifts, refunds, voids and moves between the steps for contacts built
// and not yet built. Meanwhile no reader is sent to the rows (the copy is
// dropped); at its end the rows and donor tallies equal a rebuild. An
// import batch ends a running build, and a new start builds again.
func TestGivingPeriodsBuiltInSteps(t *testing.T) {
	t.Parallel()
	f := newGivingFixture(t)
	ctx := context.Background()
	if err := f.calendar(ctx, f.pool, "America/Los_Angeles", 7); err != nil {
		t.Fatal(err)
	}
	// Gifts near local month and fiscal year edges, which Los Angeles and
	// Tokyo place differently.
	base := time.Date(2025, 3, 31, 20, 0, 0, 0, time.UTC)
	gifts := map[int64][]uuid.UUID{}
	run := func(name string, fn func(tx pgx.Tx) error) {
		t.Helper()
		if err := pgx.BeginFunc(ctx, f.pool, fn); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	add := func(tx pgx.Tx, g gift) error {
		id, err := f.insert(ctx, tx, g)
		gifts[g.contact] = append(gifts[g.contact], id)
		return err
	}
	run("the first gifts", func(tx pgx.Tx) error {
		for c := int64(1); c <= 10; c++ {
			for i := range 3 {
				currency := "USD"
				if (c+int64(i))%4 == 0 {
					currency = "EUR"
				}
				at := base.AddDate(0, 3*i, 0).Add(time.Duration(c) * 2 * time.Hour)
				if err := add(tx, gift{c, "Completed", currency, at, [2]int64{100*c + int64(i), 10}}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	start := func(zone string, fy int) bool {
		t.Helper()
		var started bool
		if err := f.pool.QueryRow(ctx, `SELECT orders.start_giving_calendar($1, $2, $3::smallint)`, f.tenant, zone, fy).Scan(&started); err != nil {
			t.Fatal(err)
		}
		return started
	}
	step := func() bool {
		t.Helper()
		var done bool
		if err := f.pool.QueryRow(ctx, `SELECT orders.build_giving_periods($1, 2)`, f.tenant).Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done
	}
	copyOf := func() string {
		t.Helper()
		var zone, building string
		if err := f.pool.QueryRow(ctx, `SELECT coalesce(time_zone, ''), coalesce(periods_zone, '')
			FROM orders.giving_rolling WHERE tenant_id = $1`, f.tenant).Scan(&zone, &building); err != nil {
			t.Fatal(err)
		}
		return zone + "|" + building
	}
	// Between steps: events for contact 1 (built first), 10 (built last),
	// a move from an unbuilt contact to a built one and back, and a new
	// contact beyond every built one.
	events := []func(tx pgx.Tx) error{
		func(tx pgx.Tx) error {
			return add(tx, gift{1, "Completed", "USD", base.Add(5 * time.Hour), [2]int64{77, 0}})
		},
		func(tx pgx.Tx) error {
			return add(tx, gift{10, "Completed", "USD", base.Add(5 * time.Hour), [2]int64{88, 0}})
		},
		func(tx pgx.Tx) error { return f.refund(ctx, tx, gifts[2][0], 50, "PartiallyRefunded") },
		func(tx pgx.Tx) error { return f.set(ctx, tx, gifts[9][1], `contact_id = 3`) },
		func(tx pgx.Tx) error { return f.set(ctx, tx, gifts[4][2], `status = 'Voided'`) },
		func(tx pgx.Tx) error { return f.set(ctx, tx, gifts[3][0], `contact_id = 8`) },
		func(tx pgx.Tx) error {
			return add(tx, gift{11, "Completed", "USD", base.AddDate(1, 0, 0), [2]int64{99, 0}})
		},
		func(tx pgx.Tx) error {
			return f.set(ctx, tx, gifts[1][1], `created_at = created_at + interval '9 hours'`)
		},
	}
	build := func() {
		t.Helper()
		for n := 0; !step(); n++ {
			if got := copyOf(); !strings.HasPrefix(got, "|") {
				t.Fatalf("step %d: the copy is %q while a build runs, want none", n, got)
			}
			if n >= 40 {
				t.Fatal("the build did not end in 40 steps")
			}
			run(fmt.Sprint("event ", n), events[n%len(events)])
		}
	}

	if !start("Asia/Tokyo", 4) {
		t.Fatal("a changed calendar started no build")
	}
	if start("Asia/Tokyo", 4) {
		t.Error("a second start of the calendar being built started another")
	}
	if got := copyOf(); got != "|Asia/Tokyo" {
		t.Errorf("after the start: %q, want the copy dropped and Asia/Tokyo being built", got)
	}
	build()
	if got := copyOf(); got != "Asia/Tokyo|" {
		t.Fatalf("after the build: %q, want the copy Asia/Tokyo", got)
	}
	t.Run("built in steps", f.checkAgainstRebuild)

	if !start("Europe/Paris", 1) {
		t.Fatal("a changed calendar started no build")
	}
	step()
	run("an import batch", func(tx pgx.Tx) error {
		id, err := f.insertFrom(ctx, tx, gift{2, "Completed", "USD", base, [2]int64{500, 0}}, &f.batch)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT orders.add_imported_gifts($1, $2)`, f.tenant, []uuid.UUID{id})
		return err
	})
	var suspended bool
	if err := f.pool.QueryRow(ctx, `SELECT time_zone IS NULL AND periods_zone IS NULL AND periods_resume_at > now()
		FROM orders.giving_rolling WHERE tenant_id = $1`, f.tenant).Scan(&suspended); err != nil {
		t.Fatal(err)
	}
	if !suspended {
		t.Fatal("an import batch during a build left the build running")
	}
	if !start("Europe/Paris", 1) {
		t.Fatal("the start after an import started no build")
	}
	build()
	t.Run("built again after an import", f.checkAgainstRebuild)
}
