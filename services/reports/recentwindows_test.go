package reports

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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
	w := newWindowGifts(t, 80)
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cal := cohorts.NewCalendar(now, ny, time.July, "10")
	// The rolling window as the housekeeping leaves it the day before:
	// a day earlier than today's target.
	var target time.Time
	if err := w.pool.QueryRow(ctx, `SELECT orders.rolling_target($1)`, now).Scan(&target); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(ctx, `INSERT INTO orders.giving_rolling (tenant_id, from_at) VALUES ($1, $2::timestamptz - interval '1 day')`,
		w.tenant, target); err != nil {
		t.Fatal(err)
	}
	start := cal.Today.AddDate(-1, 0, 1) // the major donors' window
	instants := []time.Time{
		target.Add(-24*time.Hour - time.Second), target.Add(-24 * time.Hour), target.Add(-time.Second), target,
		start.Add(-time.Second), start, start.Add(36 * time.Hour), time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC),
		now.Add(-time.Hour), cal.Today.AddDate(0, 0, 1).Add(time.Hour), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
	}
	// Contact c gives at three of the instants, amounts around the
	// threshold (10.00); some gifts voided, refunded or in euros.
	give := func(from, to int) {
		for c := from; c <= to; c++ {
			for k := range 3 {
				w.gift(c, instants[(c*3+k*5)%len(instants)], int64(300+(c*k*37)%900))
			}
		}
	}
	give(1, 40)
	// The housekeeping moves the window to today's target; later gifts
	// are recorded against the moved window.
	if _, err := w.pool.Exec(ctx, `SELECT orders.advance_giving_rolling($1, $2)`, w.tenant, target); err != nil {
		t.Fatal(err)
	}
	give(41, 80)
	cal.RollingFrom = target

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
			q := w.compile(name, def, c)
			if got := strings.Contains(q.With, "recent_minor") || strings.Contains(q.Joins, "recent_minor"); got != recent {
				t.Fatalf("%s: read from the recent figures %v, want %v", name, got, recent)
			}
			ids[recent] = w.members(name, q)
		}
		if !slices.Equal(ids[true], ids[false]) {
			t.Errorf("%s: from the recent figures %v\nfrom the months %v", name, ids[true], ids[false])
		}
		if len(ids[false]) == 0 || len(ids[false]) >= 80 {
			t.Errorf("%s: %d members of 80: the case tells nothing", name, len(ids[false]))
		}
	}
}
