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

// TestPeriodWindowsMatchMonths: a window that is one local period of the
// tenant's calendar — a fiscal year, a quarter of it, a month — read
// from orders' period rows (docs/cohorts.md, "Local periods") has the
// members the month rows give, for gifts on every side of the periods'
// local edges, refunded, voided and in another currency; and the same
// compiled query reads the months when orders' copy of the calendar is
// another one.
func TestPeriodWindowsMatchMonths(t *testing.T) {
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
	cal := cohorts.NewCalendar(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), ny, time.July, "10")
	tenant, batch := uuid.New(), uuid.New()
	setCalendar := func(zone string, fy int) {
		t.Helper()
		if _, err := pool.Exec(ctx, `SELECT orders.set_giving_calendar($1, $2, $3::smallint)`, tenant, zone, fy); err != nil {
			t.Fatal(err)
		}
	}
	setCalendar("America/New_York", 7)
	for _, q := range []string{
		`INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'b')`,
		`INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name)
			SELECT $1, g, 'Individual', 'Donor', 'N' || g FROM generate_series(1, 60) g WHERE $2::uuid IS NOT NULL`,
	} {
		if _, err := pool.Exec(ctx, q, tenant, batch); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	// Local midnights that start a fiscal year, a quarter and a month, a
	// second either side of each.
	var instants []time.Time
	for _, d := range []time.Time{time.Date(2024, 7, 1, 0, 0, 0, 0, ny), time.Date(2025, 7, 1, 0, 0, 0, 0, ny),
		time.Date(2025, 10, 1, 0, 0, 0, 0, ny), time.Date(2025, 11, 1, 0, 0, 0, 0, ny), time.Date(2025, 12, 1, 0, 0, 0, 0, ny),
		time.Date(2026, 7, 1, 0, 0, 0, 0, ny)} {
		instants = append(instants, d.Add(-time.Second), d, d.Add(36*time.Hour))
	}
	n := 0
	for c := 1; c <= 60; c++ {
		for k := range 3 {
			n++
			status, refunded, cur := "Completed", int64(0), "USD"
			amount := int64(300 + (c*k*37)%900)
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
				tenant, uuid.New(), n, c, status, cur, amount, refunded, batch, instants[(c*3+k*5)%len(instants)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	quarter := `"window":{"from":"2025-10-01","to":"2025-12-31"}`
	month := `"window":{"from":"2025-11-01","to":"2025-11-30"}`
	defs := map[string]string{
		"gave last fiscal year":           `{"field":"totalGiven","op":">","value":"0","fiscalYear":-1}`,
		"a gift this fiscal year":         `{"field":"giftCount","op":">=","value":1,"fiscalYear":0}`,
		"largest two years back":          `{"field":"largestGift","op":">=","value":"6","fiscalYear":-2}`,
		"first gift of the year in July":  `{"field":"firstGiftDate","op":"<","value":"2025-08-01","fiscalYear":-1}`,
		"nothing this year, gave before":  `{"all":[{"field":"giftCount","op":">=","value":1},{"field":"largestGift","op":"isNull","value":true,"fiscalYear":0}]}`,
		"a quarter of the fiscal year":    `{"field":"totalGiven","op":"between","value":["3","9"],` + quarter + `}`,
		"a month, last gift in its start": `{"field":"lastGiftDate","op":"<=","value":"2025-11-02",` + month + `}`,
	}
	st := cohorts.NewStore(pool)
	for name, def := range defs {
		node, err := cohorts.Parse([]byte(def))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q, err := (&cohorts.Compiler{Tenant: tenant, Currency: "USD", Calendar: cal}).Compile(ctx, "", node)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(q.With, "report_contact_giving_periods_v1") {
			t.Fatalf("%s: the window is not read from the period rows:\n%s", name, q.With)
		}
		ids := map[string][]int64{}
		for _, copyOf := range []string{"America/New_York", "UTC"} {
			setCalendar(copyOf, 7)
			if ids[copyOf], err = st.AllIDs(ctx, q); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			count, err := st.Count(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if count != int64(len(ids[copyOf])) {
				t.Errorf("%s (copy %s): count %d, %d ids", name, copyOf, count, len(ids[copyOf]))
			}
		}
		setCalendar("America/New_York", 7)
		if !slices.Equal(ids["America/New_York"], ids["UTC"]) {
			t.Errorf("%s: from the period rows %v\nfrom the months %v", name, ids["America/New_York"], ids["UTC"])
		}
		if len(ids["UTC"]) == 0 || len(ids["UTC"]) >= 60 {
			t.Errorf("%s: %d members of 60: the case tells nothing", name, len(ids["UTC"]))
		}
	}
}
