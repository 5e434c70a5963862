package schedule

import (
	"testing"
	"time"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func dayp(s string) *time.Time {
	t := day(s)
	return &t
}

func dateOf(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.DateOnly)
}

func monthly(start, next string) Schedule {
	return Schedule{Frequency: "monthly", StartDate: day(start), Status: Active, NextChargeDate: dayp(next)}
}

func TestPast(t *testing.T) {
	declined := monthly("2026-01-31", "2026-02-28")
	declined.FailedAttempts, declined.FailureReason, declined.RetryOn, declined.FirstDeclinedOn = 2, "card_declined", dayp("2026-03-03"), dayp("2026-02-28")
	ending := monthly("2026-01-31", "2026-02-28")
	ending.EndDate = dayp("2026-03-15")
	cases := []struct {
		name     string
		sc       Schedule
		period   string
		pending  bool
		next     string
		status   string
		failed   int32
		retryOn  string
		declined string
	}{
		{"month end clamps, counted from the anchor", monthly("2026-01-31", "2026-02-28"), "2026-02-28", false, "2026-03-31", Active, 0, "-", "-"},
		{"weekly", Schedule{Frequency: "weekly", StartDate: day("2026-03-02"), Status: Active}, "2026-03-09", false, "2026-03-16", Active, 0, "-", "-"},
		{"a settled charge forgets the declines", declined, "2026-02-28", false, "2026-03-31", Active, 0, "-", "-"},
		{"a pending charge keeps them, not the retry day", declined, "2026-02-28", true, "2026-03-31", Active, 2, "-", "2026-02-28"},
		{"past the end date completes", ending, "2026-02-28", false, "-", Completed, 0, "-", "-"},
	}
	for _, c := range cases {
		got := Past(c.sc, day(c.period), c.pending)
		if dateOf(got.NextChargeDate) != c.next || got.Status != c.status || got.FailedAttempts != c.failed ||
			dateOf(got.RetryOn) != c.retryOn || dateOf(got.FirstDeclinedOn) != c.declined {
			t.Errorf("%s: next %s status %s failed %d retry %s first %s", c.name, dateOf(got.NextChargeDate), got.Status,
				got.FailedAttempts, dateOf(got.RetryOn), dateOf(got.FirstDeclinedOn))
		}
	}
}

func TestDecline(t *testing.T) {
	once := monthly("2026-01-01", "2026-03-01")
	once.FailedAttempts, once.FirstDeclinedOn = 1, dayp("2026-03-01")
	thrice := once
	thrice.FailedAttempts = 3
	days := []int32{1, 3, 7}
	cases := []struct {
		name    string
		sc      Schedule
		today   string
		pastDue bool
		status  string
		failed  int32
		retryOn string
	}{
		{"first decline waits a day", monthly("2026-01-01", "2026-03-01"), "2026-03-01", false, Active, 1, "2026-03-02"},
		{"second counts from the first", once, "2026-03-02", false, Active, 2, "2026-03-04"},
		{"a runner that was down tries tomorrow", once, "2026-03-10", false, Active, 2, "2026-03-11"},
		{"retry days used up", thrice, "2026-03-08", false, PastDue, 4, "-"},
		{"no retry can help", monthly("2026-01-01", "2026-03-01"), "2026-03-01", true, PastDue, 1, "-"},
	}
	for _, c := range cases {
		got := Decline(c.sc, days, day(c.today), "card_declined", c.pastDue)
		if got.Status != c.status || got.FailedAttempts != c.failed || dateOf(got.RetryOn) != c.retryOn || got.FailureReason != "card_declined" ||
			got.FirstDeclinedOn == nil {
			t.Errorf("%s: status %s failed %d retry %s", c.name, got.Status, got.FailedAttempts, dateOf(got.RetryOn))
		}
	}
}

func TestReopenAndSettled(t *testing.T) {
	moved := monthly("2026-01-01", "2026-04-01")
	early := monthly("2026-01-01", "2026-02-01")
	paused := monthly("2026-01-01", "2026-04-01")
	paused.Status = Paused
	reopen := []struct {
		name string
		sc   Schedule
		ok   bool
		next string
	}{
		{"moved past the period goes back to it", moved, true, "2026-03-01"},
		{"not yet past it stays", early, true, "2026-02-01"},
		{"not active keeps its state", paused, false, "2026-04-01"},
	}
	for _, c := range reopen {
		got, ok := Reopen(c.sc, day("2026-03-01"))
		if ok != c.ok || dateOf(got.NextChargeDate) != c.next {
			t.Errorf("Reopen %s: %v %s", c.name, ok, dateOf(got.NextChargeDate))
		}
	}
	declined := monthly("2026-01-01", "2026-04-01")
	declined.FailedAttempts, declined.FirstDeclinedOn = 2, dayp("2026-03-01")
	retrying := declined
	retrying.RetryOn = dayp("2026-04-02")
	settled := []struct {
		name string
		sc   Schedule
		ok   bool
	}{
		{"declines forgotten", declined, true},
		{"waiting for a retry keeps them", retrying, false},
		{"no declines, nothing to do", monthly("2026-01-01", "2026-04-01"), false},
	}
	for _, c := range settled {
		got, ok := Settled(c.sc)
		if ok != c.ok || (ok && (got.FailedAttempts != 0 || got.FirstDeclinedOn != nil)) {
			t.Errorf("Settled %s: %v %+v", c.name, ok, got)
		}
	}
}

func TestCancel(t *testing.T) {
	paused := monthly("2026-01-01", "2026-04-01")
	paused.Status, paused.PausedUntil = Paused, dayp("2026-05-01")
	done := monthly("2026-01-01", "2026-04-01")
	done.Status = Completed
	cases := []struct {
		name   string
		sc     Schedule
		status string
		next   string
	}{
		{"active", monthly("2026-01-01", "2026-04-01"), Cancelled, "-"},
		{"paused", paused, Cancelled, "-"},
		{"completed stays", done, Completed, "2026-04-01"},
	}
	for _, c := range cases {
		got := Cancel(c.sc)
		if got.Status != c.status || dateOf(got.NextChargeDate) != c.next || (c.status == Cancelled && (got.PausedUntil != nil || got.RetryOn != nil)) {
			t.Errorf("%s: %s next %s", c.name, got.Status, dateOf(got.NextChargeDate))
		}
	}
}
