package dashboard

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/tenantsettings"
)

// Calendar is how a tenant counts its days: the zone its dates are in and
// the month its fiscal year starts.
type Calendar struct {
	Location        *time.Location
	FiscalYearStart time.Month
}

// Calendars reads tenants' calendars.
type Calendars struct {
	// Settings reads the tenant's settings (the auth service owns them:
	// timeZone and fiscalYearStartMonth). Nil only where no auth service
	// is reachable (this module's own tests): then Zone and January.
	Settings func(ctx context.Context, tenant uuid.UUID) (tenantsettings.Settings, error)
	// Zone reads the organization profile's time zone, the fallback when
	// Settings is nil.
	Zone func(ctx context.Context, tenant uuid.UUID) (*time.Location, error)
}

// TenantCalendar is the one place the dashboard learns a tenant's
// calendar: the tenant settings' timeZone and fiscalYearStartMonth.
func (c Calendars) TenantCalendar(ctx context.Context, tenant uuid.UUID) (Calendar, error) {
	if c.Settings == nil {
		loc, err := c.Zone(ctx, tenant)
		return Calendar{Location: loc, FiscalYearStart: time.January}, err
	}
	s, err := c.Settings(ctx, tenant)
	if err != nil {
		return Calendar{}, err
	}
	start := s.FiscalYearStartMonth
	if start < time.January || start > time.December {
		start = time.January
	}
	return Calendar{Location: s.Location, FiscalYearStart: start}, nil
}
