package reports

import (
	"context"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/reports/cohorts"
)

// majorDonorThreshold is the major-donors cohort's bar, in the tenant's
// currency: the tenant settings have no property for it yet
// (docs/cohorts.md).
const majorDonorThreshold = "1000"

// CohortCalendar is cohorts.Calendars: the one place cohorts read a
// tenant's calendar — the tenant settings' time zone and fiscal year
// start, as the dashboard reads them (s.cal) — and the major-donor
// threshold.
func (s *Service) CohortCalendar(ctx context.Context, tenant uuid.UUID) (cohorts.Calendar, error) {
	cal, err := s.cal.TenantCalendar(ctx, tenant)
	if err != nil {
		return cohorts.Calendar{}, err
	}
	return cohorts.NewCalendar(s.cfg.Now(), cal.Location, cal.FiscalYearStart, majorDonorThreshold), nil
}
