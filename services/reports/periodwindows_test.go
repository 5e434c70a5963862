package reports

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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
	w := newWindowGifts(t, 60)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cal := cohorts.NewCalendar(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), ny, time.July, "10")
	setCalendar := func(zone string) {
		t.Helper()
		if _, err := w.pool.Exec(ctx, `SELECT orders.set_giving_calendar($1, $2, 7::smallint)`, w.tenant, zone); err != nil {
			t.Fatal(err)
		}
	}
	setCalendar("America/New_York")
	// Local midnights that start a fiscal year, a quarter and a month, a
	// second either side of each.
	var instants []time.Time
	for _, d := range []time.Time{time.Date(2024, 7, 1, 0, 0, 0, 0, ny), time.Date(2025, 7, 1, 0, 0, 0, 0, ny),
		time.Date(2025, 10, 1, 0, 0, 0, 0, ny), time.Date(2025, 11, 1, 0, 0, 0, 0, ny), time.Date(2025, 12, 1, 0, 0, 0, 0, ny),
		time.Date(2026, 7, 1, 0, 0, 0, 0, ny)} {
		instants = append(instants, d.Add(-time.Second), d, d.Add(36*time.Hour))
	}
	for c := 1; c <= 60; c++ {
		for k := range 3 {
			w.gift(c, instants[(c*3+k*5)%len(instants)], int64(300+(c*k*37)%900))
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
	for name, def := range defs {
		q := w.compile(name, def, cal)
		if !strings.Contains(q.With, "report_contact_giving_periods_v1") {
			t.Fatalf("%s: the window is not read from the period rows:\n%s", name, q.With)
		}
		ids := map[string][]int64{}
		for _, copyOf := range []string{"America/New_York", "UTC"} {
			setCalendar(copyOf)
			ids[copyOf] = w.members(name+" (copy "+copyOf+")", q)
		}
		setCalendar("America/New_York")
		if !slices.Equal(ids["America/New_York"], ids["UTC"]) {
			t.Errorf("%s: from the period rows %v\nfrom the months %v", name, ids["America/New_York"], ids["UTC"])
		}
		if len(ids["UTC"]) == 0 || len(ids["UTC"]) >= 60 {
			t.Errorf("%s: %d members of 60: the case tells nothing", name, len(ids["UTC"]))
		}
	}
}
