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

// syncGivingCalendars refreshes the calendar copies that are due from the
// tenants' settings (docs/cohorts.md, "Local periods"). A copy that
// changed rebuilds the tenant's period rows. A tenant whose settings
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
			var moved bool
			moved, err = s.store.SetGivingCalendar(ctx, store.GivingCalendar{Tenant: c.Tenant, Zone: cal.Zone, FiscalYearStart: cal.FiscalYearStart}, now)
			if moved {
				changed++
				s.logger.InfoContext(ctx, "orders: rebuilt a tenant's giving periods for its calendar",
					"tenant", c.Tenant, "zone", cal.Zone, "fiscalYearStart", cal.FiscalYearStart)
			}
		}
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}
