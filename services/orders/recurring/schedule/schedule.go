// Package schedule holds a recurring donation schedule and its state
// rules as pure functions: where its next charge falls, what a decline,
// a charge or a resume does to it. The store reads and locks a schedule,
// calls these with what it read, and writes the result; they are tested
// by table without a database.
package schedule

import (
	"time"

	"github.com/google/uuid"
)

// Schedule statuses.
const (
	Active    = "active"
	Paused    = "paused"
	Cancelled = "cancelled"
	Completed = "completed"
	PastDue   = "past_due"
)

// Schedule is a recurring donation schedule.
type Schedule struct {
	TenantID       uuid.UUID
	ID             uuid.UUID
	ContactID      int64
	AmountMinor    int64
	Currency       string
	Frequency      string
	StartDate      time.Time
	EndDate        *time.Time
	FundID         uuid.UUID
	CampaignID     string
	PaymentMethod  string
	PaymentToken   string
	Status         string
	NextChargeDate *time.Time
	FailedAttempts int32
	// FailureReason is the processor's code for the last failed
	// installment (authentication_required, card_declined, …).
	FailureReason string
	OriginOrderID uuid.UUID
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// AnchorDate is the date periods count from once an amendment moved
	// it; nil means StartDate (see Anchor).
	AnchorDate *time.Time
	// PausedUntil is the day a paused schedule resumes by itself.
	PausedUntil *time.Time
	// RetryOn is when a declined installment is tried again.
	RetryOn *time.Time
	// FirstDeclinedOn is the day the current installment was first
	// declined: its retries count from it.
	FirstDeclinedOn *time.Time
}

// Anchor is the date the schedule's periods count from.
func (s Schedule) Anchor() time.Time {
	if s.AnchorDate != nil {
		return *s.AnchorDate
	}
	return s.StartDate
}

// Frequencies are the frequencies a schedule may have.
var Frequencies = []string{"weekly", "monthly", "quarterly", "annually"}

// DefaultRetryDays are the days after an installment's first decline on
// which it is tried again, for a tenant that set none: then past_due.
var DefaultRetryDays = []int32{1, 3, 7}

// Boundary is the first period boundary of a schedule anchored at anchor
// on or after day: the smallest anchor + k periods (k ≥ 0) that is not
// before day.
func Boundary(anchor time.Time, freq string, day time.Time) time.Time {
	if !day.After(anchor) {
		return anchor
	}
	k := 0
	switch freq {
	case "weekly":
		k = int(day.Sub(anchor).Hours()/24) / 7
	default:
		step := map[string]int{"quarterly": 3, "annually": 12}[freq]
		if step == 0 {
			step = 1
		}
		months := (day.Year()-anchor.Year())*12 + int(day.Month()) - int(anchor.Month())
		// anchor + (months-1) months is in the month before day's: a
		// start below the answer, so the loop below only walks forward.
		k = max(0, (months-1)/step)
	}
	for {
		if d := NextDate(anchor, freq, k); !d.Before(day) {
			return d
		}
		k++
	}
}

// After is the first boundary strictly after period.
func After(sc Schedule, period time.Time) time.Time {
	return Boundary(sc.Anchor(), sc.Frequency, period.AddDate(0, 0, 1))
}

// ClearRetry forgets the current installment's declines: a new period, a
// new payment method or a resume starts its retries afresh.
func (s *Schedule) ClearRetry() {
	s.FailedAttempts, s.FailureReason, s.RetryOn, s.FirstDeclinedOn = 0, "", nil, nil
}

// PlaceNext sets the next charge date to next, or completes the schedule
// when next is after its end date.
func (s *Schedule) PlaceNext(next time.Time) {
	if s.EndDate != nil && next.After(*s.EndDate) {
		s.Status, s.NextChargeDate = Completed, nil
		return
	}
	s.NextChargeDate = &next
}

// Resume makes a paused schedule active on day: its next charge is the
// first period boundary on or after day, so periods missed while paused
// are never charged.
func (s *Schedule) Resume(day time.Time) {
	s.Status, s.PausedUntil = Active, nil
	s.ClearRetry()
	s.PlaceNext(Boundary(s.Anchor(), s.Frequency, day))
}

// NextDate is n periods of freq after start. Months clamp to the month's
// last day (Jan 31 + 1 month = Feb 28), always counted from start so the
// day does not drift.
func NextDate(start time.Time, freq string, n int) time.Time {
	switch freq {
	case "weekly":
		return start.AddDate(0, 0, 7*n)
	case "quarterly":
		return addMonths(start, 3*n)
	case "annually":
		return addMonths(start, 12*n)
	default:
		return addMonths(start, n)
	}
}

func addMonths(t time.Time, n int) time.Time {
	y, m, d := t.Date()
	first := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	return time.Date(first.Year(), first.Month(), min(d, last), 0, 0, 0, 0, time.UTC)
}
