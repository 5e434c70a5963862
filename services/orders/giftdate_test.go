package orders

import (
	"context"
	"strings"
	"testing"
	"time"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
)

// TestGiftDateBounds: a gift may be dated from 1900-01-01 to the day
// after the tenant's today, that today counted in the tenant's time zone
// (near midnight it is not UTC's).
func TestGiftDateBounds(t *testing.T) {
	t.Parallel()
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	day := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// 2026-03-11 11:30 UTC is 01:30 on the 12th at UTC+14 (Kiritimati)
	// and 04:30 on the 11th in Los Angeles; 2026-03-11 05:00 UTC is
	// 22:00 on the 10th there.
	lateUTC := time.Date(2026, 3, 11, 11, 30, 0, 0, time.UTC)
	earlyUTC := time.Date(2026, 3, 11, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		now  time.Time
		loc  *time.Location
		date string
		ok   bool
	}{
		{"1899-12-31", lateUTC, time.UTC, "1899-12-31", false},
		{"1900-01-01", lateUTC, time.UTC, "1900-01-01", true},
		{"year 1", lateUTC, time.UTC, "0001-01-01", false},
		{"year 9999", lateUTC, time.UTC, "9999-12-31", false},
		{"today", lateUTC, time.UTC, "2026-03-11", true},
		{"today + 1", lateUTC, time.UTC, "2026-03-12", true},
		{"today + 2", lateUTC, time.UTC, "2026-03-13", false},
		{"nil zone is UTC", lateUTC, nil, "2026-03-13", false},
		{"UTC+14 already on the 12th: the 13th", lateUTC, zone("Pacific/Kiritimati"), "2026-03-13", true},
		{"UTC+14 already on the 12th: the 14th", lateUTC, zone("Pacific/Kiritimati"), "2026-03-14", false},
		{"Los Angeles still on the 10th: the 11th", earlyUTC, zone("America/Los_Angeles"), "2026-03-11", true},
		{"Los Angeles still on the 10th: the 12th", earlyUTC, zone("America/Los_Angeles"), "2026-03-12", false},
		{"UTC already on the 11th: the 12th", earlyUTC, time.UTC, "2026-03-12", true},
	} {
		msg := giftDateProblem("date", day(c.date), tenantToday(c.now, c.loc))
		if (msg == "") != c.ok {
			t.Errorf("%s: %q, want accepted %v", c.name, msg, c.ok)
		}
		if msg != "" && !strings.HasPrefix(msg, "'date' must be between 1900-01-01 and ") {
			t.Errorf("%s: message %q", c.name, msg)
		}
	}
}

// fixedCalendar answers one time zone for every tenant.
type fixedCalendar struct{ loc *time.Location }

func (f fixedCalendar) Location(context.Context, string) (*time.Location, error) { return f.loc, nil }

// TestImportGiftsRefusesDatesNoCalendarNeeds: gifts dated 9999-12-31,
// 0001-01-01 or two days ahead of the tenant's today are failed under
// "date" and recorded nowhere; the others of the batch are created. The
// tenant's today is its time zone's: at 11:30 UTC, UTC+14 is a day ahead.
func TestImportGiftsRefusesDatesNoCalendarNeeds(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	kiritimati, err := time.LoadLocation("Pacific/Kiritimati")
	if err != nil {
		t.Fatal(err)
	}
	f.srv.s.cfg.Calendar = fixedCalendar{kiritimati}
	f.srv.s.cfg.Now = func() time.Time { return time.Date(2026, 3, 11, 11, 30, 0, 0, time.UTC) }
	dated := func(row int64, date string) *ordersv1.GiftImportRow {
		r := giftRow(row, "", 7, "General", "USD")
		r.Date = date
		return r
	}
	results := f.importRows(t, false, dated(1, "9999-12-31"), dated(2, "0001-01-01"), dated(3, "1900-01-01"),
		dated(4, "2026-03-13"), dated(5, "2026-03-14"), dated(6, "1899-12-31"))
	var got []string
	for _, r := range results {
		got = append(got, r.GetOutcome()+":"+r.GetColumn())
	}
	if want := "failed:date failed:date created: created: failed:date failed:date"; strings.Join(got, " ") != want {
		t.Errorf("outcomes %v, want %s", got, want)
	}
	if n := f.count(t, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1`); n != 2 {
		t.Errorf("%d orders, want the 2 dated inside the calendar", n)
	}
}
