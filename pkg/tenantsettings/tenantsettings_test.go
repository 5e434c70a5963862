package tenantsettings

import (
	"testing"
	"time"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// TestFiscalYear: the fiscal year holding an instant, in the tenant's time
// zone, named by the calendar year it ends in.
func TestFiscalYear(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		month time.Month
		at    time.Time
		year  int
		start string
	}{
		{"calendar year", time.January, time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), 2026, "2026-01-01"},
		{"July year, after the start", time.July, time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC), 2027, "2026-07-01"},
		{"July year, before the start", time.July, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 2026, "2025-07-01"},
		{"the start's first instant", time.April, time.Date(2026, 4, 1, 4, 0, 0, 0, time.UTC), 2027, "2026-04-01"},
		// 03:59 UTC is still March 31 in New York.
		{"local time decides", time.April, time.Date(2026, 4, 1, 3, 59, 0, 0, time.UTC), 2026, "2025-04-01"},
		{"December year", time.December, time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC), 2027, "2026-12-01"},
		{"month out of range is January", 0, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC), 2026, "2026-01-01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := Settings{FiscalYearStartMonth: c.month, Location: ny}
			year, start, end := s.FiscalYear(c.at)
			if year != c.year || start.Format(time.DateOnly) != c.start || !end.Equal(start.AddDate(1, 0, 0)) || start.Location() != ny {
				t.Errorf("FiscalYear(%v) = %d %v %v, want %d from %s", c.at, year, start, end, c.year, c.start)
			}
		})
	}
}

// TestFromProto: a document whose time zone does not load is an error,
// not UTC.
func TestFromProto(t *testing.T) {
	t.Parallel()
	s, err := FromProto(&authv1.TenantSettings{TimeZone: "Europe/Paris", FiscalYearStartMonth: 7, DefaultCurrency: "EUR"})
	if err != nil || s.Location.String() != "Europe/Paris" || s.FiscalYearStartMonth != time.July {
		t.Errorf("FromProto = %+v, %v", s, err)
	}
	for _, tz := range []string{"", "Mars/Olympus"} {
		if _, err := FromProto(&authv1.TenantSettings{TimeZone: tz}); err == nil {
			t.Errorf("time zone %q accepted", tz)
		}
	}
}
