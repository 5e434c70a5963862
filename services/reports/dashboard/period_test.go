package dashboard

import (
	"testing"
	"time"
)

func date(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPeriodOf: months, quarters and fiscal years, with a calendar fiscal
// year and one starting in July, around leap days and year ends; and the
// same period a year earlier.
func TestPeriodOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, kind, day  string
		fy               time.Month
		from, to         string
		prevFrom, prevTo string
		days             int
	}{
		{"month", Month, "2026-03-15", time.January, "2026-03-01", "2026-03-31", "2025-03-01", "2025-03-31", 31},
		{"leap February", Month, "2024-02-29", time.January, "2024-02-01", "2024-02-29", "2023-02-01", "2023-02-28", 29},
		{"February after a leap year", Month, "2025-02-10", time.January, "2025-02-01", "2025-02-28", "2024-02-01", "2024-02-29", 28},
		{"December", Month, "2025-12-31", time.July, "2025-12-01", "2025-12-31", "2024-12-01", "2024-12-31", 31},
		{"month ignores the fiscal year", Month, "2026-07-01", time.July, "2026-07-01", "2026-07-31", "2025-07-01", "2025-07-31", 31},
		{"calendar Q1", Quarter, "2024-02-29", time.January, "2024-01-01", "2024-03-31", "2023-01-01", "2023-03-31", 91},
		{"calendar Q4", Quarter, "2025-11-30", time.January, "2025-10-01", "2025-12-31", "2024-10-01", "2024-12-31", 92},
		{"July FY Q1", Quarter, "2025-07-01", time.July, "2025-07-01", "2025-09-30", "2024-07-01", "2024-09-30", 92},
		{"July FY Q2 across the new year", Quarter, "2025-12-31", time.July, "2025-10-01", "2025-12-31", "2024-10-01", "2024-12-31", 92},
		{"July FY Q3", Quarter, "2026-02-14", time.July, "2026-01-01", "2026-03-31", "2025-01-01", "2025-03-31", 90},
		{"July FY Q4", Quarter, "2026-06-30", time.July, "2026-04-01", "2026-06-30", "2025-04-01", "2025-06-30", 91},
		{"February FY quarter across years", Quarter, "2026-01-15", time.February, "2025-11-01", "2026-01-31", "2024-11-01", "2025-01-31", 92},
		{"calendar fiscal year", FiscalYear, "2024-06-01", time.January, "2024-01-01", "2024-12-31", "2023-01-01", "2023-12-31", 366},
		{"July FY in its second calendar year", FiscalYear, "2026-03-01", time.July, "2025-07-01", "2026-06-30", "2024-07-01", "2025-06-30", 365},
		{"July FY on its first day", FiscalYear, "2025-07-01", time.July, "2025-07-01", "2026-06-30", "2024-07-01", "2025-06-30", 365},
		{"July FY the day before", FiscalYear, "2025-06-30", time.July, "2024-07-01", "2025-06-30", "2023-07-01", "2024-06-30", 365},
		{"July FY holding a leap day", FiscalYear, "2024-02-29", time.July, "2023-07-01", "2024-06-30", "2022-07-01", "2023-06-30", 366},
		{"December FY", FiscalYear, "2025-11-30", time.December, "2024-12-01", "2025-11-30", "2023-12-01", "2024-11-30", 365},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := PeriodOf(c.kind, date(t, c.day), c.fy)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := s, (Span{date(t, c.from), date(t, c.to)}); got != want {
				t.Errorf("period %s to %s, want %s to %s", got.From.Format(time.DateOnly), got.To.Format(time.DateOnly), c.from, c.to)
			}
			if got, want := s.YearBefore(c.kind, c.fy), (Span{date(t, c.prevFrom), date(t, c.prevTo)}); got != want {
				t.Errorf("a year earlier %s to %s, want %s to %s", got.From.Format(time.DateOnly), got.To.Format(time.DateOnly), c.prevFrom, c.prevTo)
			}
			if n := len(s.Days()); n != c.days {
				t.Errorf("%d days, want %d", n, c.days)
			}
		})
	}
}

// TestPeriodOfRefuses an unknown kind and a month out of range.
func TestPeriodOfRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kind string
		fy   time.Month
	}{{"week", time.January}, {"", time.January}, {Month, 0}, {Quarter, 13}} {
		if _, err := PeriodOf(c.kind, date(t, "2026-01-01"), c.fy); err == nil {
			t.Errorf("PeriodOf(%q, %d) succeeded", c.kind, c.fy)
		}
	}
}

// TestBounds: a span's instants in a zone, across a daylight-saving
// change (2026-03-08 in New York is 23 hours long).
func TestBounds(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		from, to   string
		loc        *time.Location
		start, end string
	}{
		{"UTC", "2026-03-01", "2026-03-31", time.UTC, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"New York, spring forward inside", "2026-03-01", "2026-03-31", ny, "2026-03-01T05:00:00Z", "2026-04-01T04:00:00Z"},
		{"New York, one short day", "2026-03-08", "2026-03-08", ny, "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"},
		{"New York, year end", "2025-12-31", "2025-12-31", ny, "2025-12-31T05:00:00Z", "2026-01-01T05:00:00Z"},
	} {
		start, end := Span{date(t, c.from), date(t, c.to)}.Bounds(c.loc)
		if got := start.UTC().Format(time.RFC3339); got != c.start {
			t.Errorf("%s: start %s, want %s", c.name, got, c.start)
		}
		if got := end.UTC().Format(time.RFC3339); got != c.end {
			t.Errorf("%s: end %s, want %s", c.name, got, c.end)
		}
	}
}
