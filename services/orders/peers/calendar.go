package peers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	_ "time/tzdata" // IANA names resolve wherever the binary runs

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// Calendar reads the time zone a tenant counts its days in: its settings'
// (docs/operators.md, "Tenant settings"), the one the organization
// profile shows and statements use. A gift's date is bounded by today in
// it (giftDateProblem).
type Calendar interface {
	// Location is the tenant's time zone.
	Location(ctx context.Context, tenantID string) (*time.Location, error)
}

// FiscalCalendar is how a tenant counts its giving: the time zone its
// dates are in and the month its fiscal year starts (1 to 12).
type FiscalCalendar struct {
	Zone            string
	FiscalYearStart int
}

// FiscalCalendars reads tenants' fiscal calendars, of which orders keeps
// a copy for its giving summaries' local periods (migration 00027).
type FiscalCalendars interface {
	FiscalCalendar(ctx context.Context, tenantID string) (FiscalCalendar, error)
}

// Settings reads and writes what orders uses of the tenant settings the
// auth service owns: the recurring retry days.
type Settings interface {
	// RetryDays are the tenant's recurring retry days.
	RetryDays(ctx context.Context, tenantID string) ([]int32, error)
	// SetRetryDays sets them (the admin command's write), returning them
	// as stored.
	SetRetryDays(ctx context.Context, tenantID string, days []int32) ([]int32, error)
}

// Actors of the orders service's settings calls, in the assertions (and
// the audit row of a write: the admin command's, so "system").
const (
	calendarActor = "orders:calendar"
	settingsActor = "orders:recurring"
	adminActor    = "system"
)

// GRPCSettings is the auth service's TenantSettingsService, called with a
// System principal of the tenant holding tenant-settings:manage, the
// scope the RPCs need. It is Calendar and Settings. No call is made
// inside a transaction.
type GRPCSettings struct {
	// Conn dials the auth service.
	Conn func() (authv1.TenantSettingsServiceClient, error)
}

func (g GRPCSettings) get(ctx context.Context, tenantID, actor string) (*authv1.TenantSettings, error) {
	c, err := g.Conn()
	if err != nil {
		return nil, err
	}
	ctx = authctx.NewOutgoingContext(ctx, authctx.System(tenantID, actor, scopes.TenantSettingsManage))
	resp, err := c.GetTenantSettings(ctx, &authv1.GetTenantSettingsRequest{TenantId: tenantID})
	if err != nil {
		return nil, fmt.Errorf("orders: read the settings of tenant %s: %w", tenantID, err)
	}
	return resp.GetSettings(), nil
}

// Location reads the tenant's time zone from its settings.
func (g GRPCSettings) Location(ctx context.Context, tenantID string) (*time.Location, error) {
	s, err := g.get(ctx, tenantID, calendarActor)
	if err != nil {
		return nil, err
	}
	// The auth service saves only names that load and answers its
	// default for a tenant that set none.
	tz := s.GetTimeZone()
	if tz == "" {
		return nil, errors.New("orders: the tenant settings name no time zone")
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("orders: the tenant's time zone %q: %w", tz, err)
	}
	return loc, nil
}

// FiscalCalendar reads the tenant's time zone and fiscal year start.
func (g GRPCSettings) FiscalCalendar(ctx context.Context, tenantID string) (FiscalCalendar, error) {
	s, err := g.get(ctx, tenantID, calendarActor)
	if err != nil {
		return FiscalCalendar{}, err
	}
	c := FiscalCalendar{Zone: s.GetTimeZone(), FiscalYearStart: int(s.GetFiscalYearStartMonth())}
	if c.Zone == "" || c.FiscalYearStart < 1 || c.FiscalYearStart > 12 {
		return FiscalCalendar{}, fmt.Errorf("orders: the settings of tenant %s name no calendar (%q, %d)", tenantID, c.Zone, c.FiscalYearStart)
	}
	return c, nil
}

// RetryDays reads the tenant's recurring retry days.
func (g GRPCSettings) RetryDays(ctx context.Context, tenantID string) ([]int32, error) {
	s, err := g.get(ctx, tenantID, settingsActor)
	if err != nil {
		return nil, err
	}
	return orNone(s.GetRecurringRetryDays()), nil
}

// orNone is days, or an empty list for none (the wire's empty list reads
// as nil, which orders.recurring_settings does not take).
func orNone(days []int32) []int32 {
	if days == nil {
		return []int32{}
	}
	return days
}

// SetRetryDays writes the tenant's retry days through the settings' PUT
// (one tenant_settings.updated row when they change, actor system).
func (g GRPCSettings) SetRetryDays(ctx context.Context, tenantID string, days []int32) ([]int32, error) {
	c, err := g.Conn()
	if err != nil {
		return nil, err
	}
	list := &structpb.ListValue{Values: make([]*structpb.Value, len(days))}
	for i, d := range days {
		list.Values[i] = structpb.NewNumberValue(float64(d))
	}
	ctx = authctx.NewOutgoingContext(ctx, authctx.System(tenantID, adminActor, scopes.TenantSettingsManage))
	resp, err := c.UpdateTenantSettings(ctx, &authv1.UpdateTenantSettingsRequest{TenantId: tenantID, RecurringRetryDays: list})
	if err != nil {
		return nil, err
	}
	return orNone(resp.GetSettings().GetRecurringRetryDays()), nil
}

// SyncRetryDays copies the tenant's retry days from settings with
// copyTo (orders.recurring_settings, which declines are counted on inside
// their transactions), outside any transaction, before a decline is
// recorded: the runner's and a processor's notification of a failed
// installment. When auth cannot be reached the copy last read counts and
// the log says so: a decline is better recorded on the last days read
// than not at all. A nil settings does nothing.
func SyncRetryDays(ctx context.Context, settings Settings, copyTo func(context.Context, uuid.UUID, []int32) ([]int32, error),
	tenantID uuid.UUID, logger *slog.Logger) {
	if settings == nil {
		return
	}
	days, err := settings.RetryDays(ctx, tenantID.String())
	if err == nil {
		_, err = copyTo(ctx, tenantID, days)
	}
	if err != nil {
		logger.WarnContext(ctx, "orders: read the tenant's retry days; the last copy counts", "tenant_id", tenantID, "error", err)
	}
}
