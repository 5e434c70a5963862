package schedule

import "time"

// Past moves a schedule past period, an installment charged or skipped:
// its next charge date is the first boundary after period (or the
// schedule completes). A charge that settles later (pending: a bank debit,
// processing) has not gone through yet, so the declines counted so far
// stay (only the retry day goes) until it settles (Settled forgets them):
// a debit returned again counts on from them and the schedule reaches
// past_due instead of starting its retries afresh every time. Otherwise
// the installment's declines are forgotten.
func Past(sc Schedule, period time.Time, pending bool) Schedule {
	next := sc
	if pending {
		next.RetryOn = nil
	} else {
		next.ClearRetry()
	}
	next.PlaceNext(After(sc, period))
	return next
}

// Decline counts a declined attempt on next: the schedule waits for its
// next retry day, counted from the first decline on the tenant's retry
// days, or is past_due when they are used up or no retry can help
// (pastDue). A runner that was down meanwhile tries no sooner than the day
// after today.
func Decline(next Schedule, days []int32, today time.Time, reason string, pastDue bool) Schedule {
	next.FailedAttempts++
	next.FailureReason = reason
	if next.FirstDeclinedOn == nil {
		next.FirstDeclinedOn = &today
	}
	if retry := int(next.FailedAttempts) - 1; !pastDue && retry < len(days) {
		on := next.FirstDeclinedOn.AddDate(0, 0, int(days[retry]))
		if !on.After(today) {
			on = today.AddDate(0, 0, 1)
		}
		next.RetryOn = &on
	} else {
		next.Status, next.RetryOn = PastDue, nil
	}
	return next
}

// Reopen returns an active schedule to period, an installment whose charge
// failed after it was recorded, when it has moved past it; it reports
// false (nothing to change) for a schedule that is not active, which keeps
// its state. The caller then counts the decline (Decline).
func Reopen(sc Schedule, period time.Time) (Schedule, bool) {
	if sc.Status != Active {
		return sc, false
	}
	next := sc
	if sc.NextChargeDate == nil || period.Before(*sc.NextChargeDate) {
		next.NextChargeDate = &period
	}
	return next, true
}

// Settled forgets the declines of an active schedule whose installment
// charge went through after it was recorded, unless the schedule is
// waiting for the retry of a period meanwhile; it reports false when
// nothing changes.
func Settled(sc Schedule) (Schedule, bool) {
	if sc.Status != Active || sc.FailedAttempts == 0 || sc.RetryOn != nil {
		return sc, false
	}
	next := sc
	next.ClearRetry()
	return next, true
}

// Cancel cancels a schedule: no next charge, no pause, no retry. A
// cancelled or completed schedule stays as it is.
func Cancel(sc Schedule) Schedule {
	if sc.Status == Cancelled || sc.Status == Completed {
		return sc
	}
	sc.Status, sc.NextChargeDate, sc.PausedUntil, sc.RetryOn = Cancelled, nil, nil, nil
	return sc
}
