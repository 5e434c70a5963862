package dashboard

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Calendar is how a tenant counts its days: the zone its dates are in and
// the month its fiscal year starts.
type Calendar struct {
	Location        *time.Location
	FiscalYearStart time.Month
}

// Calendars reads tenants' calendars.
type Calendars struct {
	// Zone reads the organization profile's time zone (its default for a
	// tenant without a profile).
	Zone func(ctx context.Context, tenant uuid.UUID) (*time.Location, error)
	// FiscalYearStart is the deployment's fiscal year start month
	// (ALMONER_FISCAL_YEAR_START_MONTH; January when zero).
	FiscalYearStart time.Month
}

// TenantCalendar is the one place the dashboard learns a tenant's
// calendar. Until the tenant settings land (the operators issue's
// timeZone and fiscalYearStartMonth), it answers the organization
// profile's time zone and the deployment's fiscal year start month
// (January unless ALMONER_FISCAL_YEAR_START_MONTH says otherwise, which
// the tests use for a July fiscal year). Rewire it to the tenant's
// settings, keeping these as their defaults.
func (c Calendars) TenantCalendar(ctx context.Context, tenant uuid.UUID) (Calendar, error) {
	loc, err := c.Zone(ctx, tenant)
	if err != nil {
		return Calendar{}, err
	}
	start := c.FiscalYearStart
	if start == 0 {
		start = time.January
	}
	return Calendar{Location: loc, FiscalYearStart: start}, nil
}
