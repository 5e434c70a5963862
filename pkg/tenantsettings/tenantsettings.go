// Package tenantsettings is how a service reads a tenant's settings, which
// the auth service owns (docs/operators.md, "Tenant settings"): the time
// zone its days are counted in, its fiscal year, its retry days, its
// receipt threshold. Read them outside any transaction (a call to auth is
// a network call); a request path reads them once per request.
package tenantsettings

import (
	"context"
	"fmt"
	"time"
	_ "time/tzdata" // IANA names resolve wherever the binary runs

	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// Settings is a tenant's settings document.
type Settings struct {
	DefaultCurrency string
	// FiscalYearStartMonth is 1 (January) to 12.
	FiscalYearStartMonth time.Month
	// TimeZone is the IANA name; Location is it loaded.
	TimeZone string
	Location *time.Location
	// RecurringRetryDays are the days after an installment's first
	// decline on which it is tried again.
	RecurringRetryDays []int32
	// DailyBatchCloseTime is "HH:MM" in Location.
	DailyBatchCloseTime string
	// ReceiptThreshold is a decimal literal in DefaultCurrency.
	ReceiptThreshold string
}

// Reader reads tenants' settings from the auth service's
// TenantSettingsService.GetTenantSettings, asserting a System principal of
// the tenant with tenant-settings:manage (the scope the RPC needs) and
// Actor (the calling service, e.g. "reports:cohorts").
type Reader struct {
	// Conn dials the auth service (service.Upstream's Conn, or a
	// service.Deps' Dial("auth")).
	Conn func() (grpc.ClientConnInterface, error)
	// Actor names the caller in the assertion.
	Actor string
}

// Get reads the tenant's settings (the defaults for those it never set).
func (r Reader) Get(ctx context.Context, tenantID string) (Settings, error) {
	conn, err := r.Conn()
	if err != nil {
		return Settings{}, err
	}
	ctx = authctx.NewOutgoingContext(ctx, authctx.System(tenantID, r.Actor, scopes.TenantSettingsManage))
	resp, err := authv1.NewTenantSettingsServiceClient(conn).GetTenantSettings(ctx, &authv1.GetTenantSettingsRequest{TenantId: tenantID})
	if err != nil {
		return Settings{}, fmt.Errorf("tenant settings of %s: %w", tenantID, err)
	}
	return FromProto(resp.GetSettings())
}

// FromProto reads the wire document.
func FromProto(s *authv1.TenantSettings) (Settings, error) {
	loc, err := time.LoadLocation(s.GetTimeZone())
	if err != nil || s.GetTimeZone() == "" {
		return Settings{}, fmt.Errorf("tenant settings: time zone %q does not load: %w", s.GetTimeZone(), err)
	}
	return Settings{DefaultCurrency: s.GetDefaultCurrency(), FiscalYearStartMonth: time.Month(s.GetFiscalYearStartMonth()),
		TimeZone: s.GetTimeZone(), Location: loc, RecurringRetryDays: s.GetRecurringRetryDays(),
		DailyBatchCloseTime: s.GetDailyBatchCloseTime(), ReceiptThreshold: s.GetReceiptThreshold().GetValue()}, nil
}

// FiscalYear returns the fiscal year that holds t, as the calendar year
// it ends in (a year starting in July 2026 is fiscal 2027; one starting
// in January is the calendar year), with its first instant and the first
// instant of the next, both in Location.
func (s Settings) FiscalYear(t time.Time) (year int, start, end time.Time) {
	m := s.FiscalYearStartMonth
	if m < time.January || m > time.December {
		m = time.January
	}
	local := t.In(s.Location)
	y := local.Year()
	if local.Month() < m {
		y--
	}
	start = time.Date(y, m, 1, 0, 0, 0, 0, s.Location)
	end = start.AddDate(1, 0, 0)
	year = end.AddDate(0, 0, -1).Year()
	return year, start, end
}
