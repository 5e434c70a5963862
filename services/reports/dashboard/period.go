package dashboard

import (
	"fmt"
	"time"
)

// The kinds of period a dashboard covers.
const (
	Month      = "month"
	Quarter    = "quarter"
	FiscalYear = "fiscal-year"
)

// Span is a run of whole days, From to To inclusive, each a date at UTC
// midnight (a calendar day, not an instant: Bounds places it in a zone).
type Span struct {
	From, To time.Time
}

// day is the calendar day of t, at UTC midnight.
func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// fiscalYearStart is the first day of the fiscal year that holds d, for a
// fiscal year starting on the first of fyStart.
func fiscalYearStart(d time.Time, fyStart time.Month) time.Time {
	y := d.Year()
	if d.Month() < fyStart {
		y--
	}
	return day(y, fyStart, 1)
}

// PeriodOf is the period of kind that holds d: its calendar month, its
// quarter of the fiscal year, or its fiscal year, for a fiscal year that
// starts on the first of fyStart (January: the calendar year).
func PeriodOf(kind string, d time.Time, fyStart time.Month) (Span, error) {
	if fyStart < time.January || fyStart > time.December {
		return Span{}, fmt.Errorf("dashboard: fiscal year start month %d", fyStart)
	}
	d = day(d.Year(), d.Month(), d.Day())
	var from time.Time
	months := 0
	switch kind {
	case Month:
		from, months = day(d.Year(), d.Month(), 1), 1
	case Quarter:
		start := fiscalYearStart(d, fyStart)
		into := (int(d.Month()) - int(fyStart) + 12) % 12
		from, months = start.AddDate(0, into/3*3, 0), 3
	case FiscalYear:
		from, months = fiscalYearStart(d, fyStart), 12
	default:
		return Span{}, fmt.Errorf("dashboard: unknown period %q", kind)
	}
	// Day 0 of a month is the last day of the month before it.
	return Span{From: from, To: day(from.Year(), from.Month()+time.Month(months), 0)}, nil
}

// YearBefore is the same period a year earlier: the period of kind that
// holds the day a year before s's first (a first of a month, so February
// 29 never needs moving).
func (s Span) YearBefore(kind string, fyStart time.Month) Span {
	prev, err := PeriodOf(kind, s.From.AddDate(-1, 0, 0), fyStart)
	if err != nil {
		// s came from PeriodOf with the same kind and month.
		panic(err)
	}
	return prev
}

// Bounds are the instants the span covers in loc: from its first day's
// midnight to the midnight after its last day, half open. A day of a
// daylight-saving change is 23 or 25 hours long, as the zone has it.
func (s Span) Bounds(loc *time.Location) (start, end time.Time) {
	start = time.Date(s.From.Year(), s.From.Month(), s.From.Day(), 0, 0, 0, 0, loc)
	end = time.Date(s.To.Year(), s.To.Month(), s.To.Day()+1, 0, 0, 0, 0, loc)
	return start, end
}

// Days are the span's days, oldest first.
func (s Span) Days() []time.Time {
	var out []time.Time
	for d := s.From; !d.After(s.To); d = d.AddDate(0, 0, 1) {
		out = append(out, d)
	}
	return out
}
