package reports

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/reports/cohorts"
)

// TestRecentWindowsMatchMonths: a window read from the lifetime rows'
// recent figures (the major donors' last 12 months, docs/cohorts.md,
// Rolling windows) has the members the month rows give, for gifts on
// every side of the rolling window's start, of the window's start and
// end, refunded, voided, in another currency, and after the rolling
// window moved.
func TestRecentWindowsMatchMonths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, testMigrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	cal := cohorts.NewCalendar(now, ny, time.July, "10")
	tenant, batch := uuid.New(), uuid.New()
	// The rolling window as the housekeeping leaves it the day before:
	// a day earlier than today's target.
	var target time.Time
	if err := pool.QueryRow(ctx, `SELECT orders.rolling_target($1)`, now).Scan(&target); err != nil {
		t.Fatal(err)
	}
	start := cal.Today.AddDate(-1, 0, 1) // the major donors' window
	instants := []time.Time{
		target.Add(-24*time.Hour - time.Second), target.Add(-24 * time.Hour), target.Add(-time.Second), target,
		start.Add(-time.Second), start, start.Add(36 * time.Hour), time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC),
		now.Add(-time.Hour), cal.Today.AddDate(0, 0, 1).Add(time.Hour), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, q := range []string{
		`INSERT INTO orders.giving_rolling (tenant_id, from_at) VALUES ($1, $2::timestamptz - interval '1 day')
			ON CONFLICT DO NOTHING RETURNING $3::uuid`, // every statement takes the three arguments
		`INSERT INTO orders.batches (tenant_id, id, name) SELECT $1, $3, 'b' WHERE $2::timestamptz IS NOT NULL`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name)
			SELECT $1, g, 'Individual', 'Donor', 'N' || g FROM generate_series(1, 80) g
			WHERE $2::timestamptz IS NOT NULL AND $3::uuid IS NOT NULL`,
	} {
		if _, err := pool.Exec(ctx, q, tenant, target, batch); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	// Contact c gives at three of the instants, amounts around the
	// threshold (10.00); some gifts voided, refunded or in euros.
	n := 0
	gift := func(contact, i int, amount int64) {
		n++
		status, refunded, cur := "Completed", int64(0), "USD"
		switch {
		case n%11 == 0:
			status = "Voided"
		case n%7 == 0:
			status, refunded = "PartiallyRefunded", amount/2
		case n%13 == 0:
			status, refunded = "Refunded", amount
		case n%17 == 0:
			cur = "EUR"
		}
		if _, err := pool.Exec(ctx, `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency,
			donation_subtotal_minor, donation_refunded_minor, refunded_minor, item_subtotal_minor, total_minor, deductible_minor,
			has_donations, has_items, batch_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, 0, $7, $7, true, false, $9, $10)`,
			tenant, uuid.New(), n, contact, status, cur, amount, refunded, batch, instants[i]); err != nil {
			t.Fatal(err)
		}
	}
	give := func(from, to int) {
		for c := from; c <= to; c++ {
			for k := range 3 {
				gift(c, (c*3+k*5)%len(instants), int64(300+(c*k*37)%900))
			}
		}
	}
	give(1, 40)
	// The housekeeping moves the window to today's target; later gifts
	// are recorded against the moved window.
	if _, err := pool.Exec(ctx, `SELECT orders.advance_giving_rolling($1, $2)`, tenant, target); err != nil {
		t.Fatal(err)
	}
	give(41, 80)
	cal.RollingFrom = target

	st := cohorts.NewStore(pool)
	window := `"window":{"from":"` + start.Format(time.DateOnly) + `","to":"2026-12-02"}`
	defs := map[string]string{
		"major donors":          cohorts.BuiltinDefinition("major-donors", cal),
		"two gifts":             `{"field":"giftCount","op":">=","value":2,` + window + `}`,
		"between, any gift":     `{"all":[{"field":"totalGiven","op":"between","value":["5","30"],` + window + `},{"field":"giftCount","op":">=","value":1}]}`,
		"from the 1st to 2027":  `{"field":"totalGiven","op":">","value":"0","window":{"from":"2025-12-01","to":"2027-01-01"}}`,
		"no gift in the window": `{"all":[{"field":"giftCount","op":">=","value":1},{"field":"largestGift","op":"isNull","value":true,` + window + `}]}`,
	}
	for name, def := range defs {
		ids := map[bool][]int64{}
		for _, recent := range []bool{true, false} {
			c := cal
			if !recent {
				c.RollingFrom = time.Time{}
			}
			node, err := cohorts.Parse([]byte(def))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			comp := &cohorts.Compiler{Tenant: tenant, Currency: "USD", Calendar: c}
			q, err := comp.Compile(ctx, "", node)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := strings.Contains(q.With, "report_giving_rolling_v1"); got != recent {
				t.Fatalf("%s: read from the recent figures %v, want %v", name, got, recent)
			}
			if ids[recent], err = st.AllIDs(ctx, q); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			count, err := st.Count(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if count != int64(len(ids[recent])) {
				t.Errorf("%s (recent %v): count %d, %d ids", name, recent, count, len(ids[recent]))
			}
		}
		if !slices.Equal(ids[true], ids[false]) {
			t.Errorf("%s: from the recent figures %v\nfrom the months %v", name, ids[true], ids[false])
		}
		if len(ids[false]) == 0 || len(ids[false]) >= 80 {
			t.Errorf("%s: %d members of 80: the case tells nothing", name, len(ids[false]))
		}
	}
}
