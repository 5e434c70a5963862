package reports

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/reports/cohorts"
)

// CohortCalendar is cohorts.Calendars: the one place cohorts read a
// tenant's settings. Until the tenant settings of the operators issue
// land it falls back: the time zone is the organization profile's, the
// fiscal year starts in January (or in ALMONER_COHORT_FISCAL_YEAR_START,
// a deployment-wide month the tests set) and the major-donor threshold is
// 1,000 in the tenant's currency. Rewire it to the settings then.
func (s *Service) CohortCalendar(ctx context.Context, tenant uuid.UUID) (cohorts.Calendar, error) {
	prof, err := s.profile(ctx, tenant)
	if err != nil {
		return cohorts.Calendar{}, err
	}
	start := time.Month(s.cfg.CohortFiscalYearStart)
	if start == 0 {
		start = time.January
	}
	return cohorts.NewCalendar(s.cfg.Now(), location(prof), start, "1000"), nil
}
