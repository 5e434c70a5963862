package cohorts

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Calendar is what a tenant's cohorts are evaluated against: its time
// zone, the month its fiscal year starts, its major-donor threshold and
// today (a date in that zone).
type Calendar struct {
	Location             *time.Location
	FiscalYearStartMonth time.Month
	// MajorDonorThreshold is the major-donors built-in's amount in the
	// tenant's currency, a decimal string ("1000").
	MajorDonorThreshold string
	// Today is midnight of the tenant's current date, in Location.
	Today time.Time
	// RollingFrom is the start of the tenant's rolling giving window as
	// last read (orders.report_giving_rolling_v1; zero when it has none):
	// a window starting shortly after it is read from the lifetime rows'
	// recent figures (Compiler.recentServes).
	RollingFrom time.Time
}

// Calendars gives a tenant's calendar. The reports service implements it
// (Service.CohortCalendar): the one place that reads the tenant settings.
type Calendars interface {
	CohortCalendar(ctx context.Context, tenant uuid.UUID) (Calendar, error)
}

// NewCalendar makes a calendar for now in loc.
func NewCalendar(now time.Time, loc *time.Location, fiscalStart time.Month, threshold string) Calendar {
	if loc == nil {
		loc = time.UTC
	}
	if fiscalStart < time.January || fiscalStart > time.December {
		fiscalStart = time.January
	}
	if threshold == "" {
		threshold = "1000"
	}
	l := now.In(loc)
	return Calendar{Location: loc, FiscalYearStartMonth: fiscalStart, MajorDonorThreshold: threshold,
		Today: time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)}
}

// FiscalYear returns the first day of the fiscal year offset years from
// the one holding today (0 this one, -1 the last), and the first day of
// the next.
func (c Calendar) FiscalYear(offset int) (time.Time, time.Time) {
	y := c.Today.Year()
	if c.Today.Month() < c.FiscalYearStartMonth {
		y--
	}
	start := time.Date(y+offset, c.FiscalYearStartMonth, 1, 0, 0, 0, 0, c.Location)
	return start, start.AddDate(1, 0, 0)
}

// Date parses a YYYY-MM-DD date in the calendar's zone.
func (c Calendar) Date(s string) (time.Time, error) {
	t, err := time.ParseInLocation(time.DateOnly, s, c.Location)
	if err != nil {
		return t, fmt.Errorf("cohorts: date %q: %w", s, err)
	}
	return t, nil
}

// day formats a date.
func day(t time.Time) string { return t.Format(time.DateOnly) }
