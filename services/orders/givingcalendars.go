package orders

import (
	"context"
	"time"

	"github.com/almoner/almoner/services/orders/store"
)

// GivingCalendarCheckEvery is how long a tenant's calendar copy is
// trusted before the housekeeping reads the tenant's settings again: a
// changed time zone or fiscal year reaches the period rows within it
// (readers use the gifts meanwhile: they compare the copy with the
// calendar they read themselves).
const GivingCalendarCheckEvery = 5 * time.Minute

// givingCalendarsPerPass bounds the settings reads of one housekeeping
// pass (about a millisecond each); the rest wait for the next. With the
// runner's default minute, 10,000 tenants are all checked every ten
// minutes.
const givingCalendarsPerPass = 1000

// givingPeriodStep is how long one step of a period build should hold
// the tenant's lock (orders.build_giving_periods): what the tenant's gifts
// may wait at their commit. The number of contacts a step takes follows
// the last step's time (stepContacts).
const givingPeriodStep = 100 * time.Millisecond

// The bounds of a step's contacts: a first step takes firstStepContacts.
const (
	firstStepContacts = 200
	minStepContacts   = 100
	maxStepContacts   = 5000
)

// stepContacts is the next step's contacts after a step of n contacts
// took took: n scaled to givingPeriodStep, at most doubled, within the
// bounds.
func stepContacts(n int, took time.Duration) int {
	next := 2 * n
	if took > 0 {
		next = min(next, int(float64(n)*float64(givingPeriodStep)/float64(took)))
	}
	return max(minStepContacts, min(maxStepContacts, next))
}

// givingPeriodsPerPass bounds the time one housekeeping pass spends on
// builds; a build longer than that goes on at the next pass (readers read
// the gifts meanwhile).
const givingPeriodsPerPass = 20 * time.Second

// syncGivingCalendars refreshes the calendar copies that are due from the
// tenants' settings (docs/cohorts.md, "Local periods"). A copy that
// changed starts a build of the tenant's period rows, which
// buildGivingPeriods carries out. A tenant whose settings
// cannot be read keeps its copy and is tried again when due again, so
// that tenants whose reads fail cannot hold the others back.
func (s *Service) syncGivingCalendars(ctx context.Context) (changed int, err error) {
	if s.cfg.FiscalCalendars == nil {
		return 0, nil
	}
	now := s.cfg.Now()
	due, err := s.store.GivingCalendarsDue(ctx, now.Add(-GivingCalendarCheckEvery), now, givingCalendarsPerPass)
	if err != nil {
		return 0, err
	}
	for _, c := range due {
		cal, err := s.cfg.FiscalCalendars.FiscalCalendar(ctx, c.Tenant.String())
		if err != nil {
			s.logger.WarnContext(ctx, "orders: read a tenant's calendar", "tenant", c.Tenant, "error", err)
		}
		if err != nil || (cal.Zone == c.Zone && cal.FiscalYearStart == c.FiscalYearStart) {
			err = s.store.CheckedGivingCalendar(ctx, c.Tenant, now)
		} else {
			var started bool
			started, err = s.store.StartGivingCalendar(ctx, store.GivingCalendar{Tenant: c.Tenant, Zone: cal.Zone, FiscalYearStart: cal.FiscalYearStart}, now)
			if started {
				changed++
				s.logger.InfoContext(ctx, "orders: building a tenant's giving periods for its calendar",
					"tenant", c.Tenant, "zone", cal.Zone, "fiscalYearStart", cal.FiscalYearStart)
			}
		}
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// buildGivingPeriods carries the running period builds forward a step at
// a time, each step its own transaction of about givingPeriodStep, until
// they are done or the pass's time is up; it returns how many builds it
// finished.
func (s *Service) buildGivingPeriods(ctx context.Context) (done int, err error) {
	tenants, err := s.store.GivingPeriodBuilds(ctx)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(givingPeriodsPerPass)
	for _, tenant := range tenants {
		for n := firstStepContacts; time.Now().Before(deadline); {
			began := time.Now()
			finished, err := s.store.BuildGivingPeriods(ctx, tenant, n)
			if err != nil {
				return done, err
			}
			n = stepContacts(n, time.Since(began))
			if finished {
				done++
				s.logger.InfoContext(ctx, "orders: built a tenant's giving periods", "tenant", tenant)
				break
			}
		}
	}
	return done, nil
}
