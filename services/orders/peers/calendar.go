package peers

import (
	"context"
	"errors"
	"fmt"
	"time"
	_ "time/tzdata" // IANA names resolve wherever the binary runs

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// Calendar reads the time zone a tenant counts its days in: the
// organization profile's, whose calendar years its statements cover. A
// gift's date is bounded by today in it (giftDateProblem).
type Calendar interface {
	// Location is the tenant's time zone.
	Location(ctx context.Context, tenantID string) (*time.Location, error)
}

// calendarActor names the orders service in the assertion of its profile
// reads.
const calendarActor = "orders:calendar"

// GRPCCalendar reads the time zone from the reports service's
// OrganizationProfileService, which answers its default (America/New_York)
// for a tenant that saved no profile. The call asserts a System principal
// of the tenant with tenantSettings:manage, the scope the profile's read
// needs; it only reads.
type GRPCCalendar struct {
	// Conn dials the reports service.
	Conn func() (reportsv1.OrganizationProfileServiceClient, error)
}

// Location reads the tenant's time zone from its organization profile.
func (g GRPCCalendar) Location(ctx context.Context, tenantID string) (*time.Location, error) {
	c, err := g.Conn()
	if err != nil {
		return nil, err
	}
	ctx = authctx.NewOutgoingContext(ctx, authctx.System(tenantID, calendarActor, scopes.TenantSettingsManage))
	resp, err := c.GetOrganizationProfile(ctx, &reportsv1.GetOrganizationProfileRequest{TenantId: tenantID})
	if err != nil {
		return nil, err
	}
	// The reports service saves only names that load, and answers its
	// default for a tenant without a profile.
	tz := resp.GetProfile().GetTimeZone()
	if tz == "" {
		return nil, errors.New("orders: the organization profile names no time zone")
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("orders: the organization profile's time zone %q: %w", tz, err)
	}
	return loc, nil
}
