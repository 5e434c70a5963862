package dashboard

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/traceid"
)

// lapsedMonths is how long without a gift makes a donor lapsed.
const lapsedMonths = 18

// Server is the DashboardService.
type Server struct {
	reportsv1.UnimplementedDashboardServiceServer
	store     *Store
	calendars Calendars
	// auth answers whether a user is a member of the tenant.
	auth *service.Upstream
	now  func() time.Time
}

// NewServer returns the DashboardService; auth reaches the auth service's
// MembershipService, now is the clock (today's date).
func NewServer(st *Store, calendars Calendars, auth *service.Upstream, now func() time.Time) *Server {
	if now == nil {
		now = time.Now
	}
	return &Server{store: st, calendars: calendars, auth: auth, now: now}
}

// GetDashboard answers the tenant's figures.
func (x *Server) GetDashboard(ctx context.Context, req *reportsv1.GetDashboardRequest) (*reportsv1.GetDashboardResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.DonationsView)
	if err != nil {
		return nil, err
	}
	q, _, err := x.query(ctx, p, req.GetPeriod(), req.GetDate())
	if err != nil {
		return nil, err
	}
	raw, err := x.store.Figures(ctx, q)
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetDashboardResponse{Dashboard: Build(raw, q)}, nil
}

// GetUserDashboard answers a portfolio's figures and work list.
func (x *Server) GetUserDashboard(ctx context.Context, req *reportsv1.GetUserDashboardRequest) (*reportsv1.GetUserDashboardResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.DonationsView)
	if err != nil {
		return nil, err
	}
	user, err := x.portfolioUser(ctx, p, req.GetUserId())
	if err != nil {
		return nil, err
	}
	q, cal, err := x.query(ctx, p, req.GetPeriod(), req.GetDate())
	if err != nil {
		return nil, err
	}
	if q.Contacts, err = x.store.Portfolio(ctx, q.Tenant, user); err != nil {
		return nil, err
	}
	raw, err := x.store.Figures(ctx, q)
	if err != nil {
		return nil, err
	}
	today := x.now().In(cal.Location)
	lapsed := time.Date(today.Year(), today.Month()-lapsedMonths, today.Day(), 0, 0, 0, 0, cal.Location)
	w, err := x.store.Worklist(ctx, q.Tenant, q.Contacts, lapsed)
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetUserDashboardResponse{Dashboard: userDashboard(user, Build(raw, q), w)}, nil
}

// portfolioUser resolves the path's user: `me` is the session's user (an
// API key has none: 400); another user needs users:manage (403, before
// anything says whether they exist) and must be a member of the tenant
// (404 otherwise, as is an id that is not a UUID).
func (x *Server) portfolioUser(ctx context.Context, p authctx.Principal, raw string) (uuid.UUID, error) {
	if strings.EqualFold(raw, "me") {
		if p.UserID == "" {
			return uuid.Nil, apperr.Invalid(apperr.Violation{Field: "UserId",
				Message: "'me' is the signed-in staff user; an API key is none: name the user's id."})
		}
		raw = p.UserID
	}
	self := strings.EqualFold(raw, p.UserID)
	if !self && !p.HasScope(scopes.UsersManage) {
		return uuid.Nil, apperr.MissingPermission(scopes.UsersManage)
	}
	user, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, apperr.NotFound("User")
	}
	if self {
		// The session's validation found the user an active member.
		return user, nil
	}
	member, err := x.isMember(ctx, p, user)
	if err != nil {
		return uuid.Nil, err
	}
	if !member {
		return uuid.Nil, apperr.NotFound("User")
	}
	return user, nil
}

// isMember asks auth whether user has a membership in p's tenant, with
// p's own assertion (auth answers only about the caller's tenant).
func (x *Server) isMember(ctx context.Context, p authctx.Principal, user uuid.UUID) (bool, error) {
	conn, err := x.auth.Conn()
	if err != nil {
		return false, err
	}
	callCtx := authctx.NewOutgoingContext(traceid.Forward(ctx), p)
	resp, err := authv1.NewMembershipServiceClient(conn).GetMembership(callCtx,
		&authv1.GetMembershipRequest{TenantId: p.TenantID, UserId: user.String()})
	if err != nil {
		return false, fmt.Errorf("dashboard: membership of %s: %w", user, err)
	}
	return resp.GetMember(), nil
}

// query reads the period and the tenant's calendar and currency into
// what the store reads: 400 under Period or Date for a bad one.
func (x *Server) query(ctx context.Context, p authctx.Principal, period, date string) (Query, Calendar, error) {
	currency, err := p.DefaultCurrency()
	if err != nil {
		return Query{}, Calendar{}, err
	}
	cal, err := x.calendars.TenantCalendar(ctx, p.Tenant())
	if err != nil {
		return Query{}, Calendar{}, err
	}
	if period == "" {
		period = Month
	}
	var v apperr.Violations
	if period != Month && period != Quarter && period != FiscalYear {
		v.Add("Period", "'Period' must be one of: month, quarter, fiscal-year.")
	}
	d := x.now().In(cal.Location)
	if date != "" {
		parsed, perr := time.Parse(time.DateOnly, date)
		if perr != nil || parsed.Year() < 1902 || parsed.Year() > 9998 {
			v.Add("Date", "'Date' must be a date, YYYY-MM-DD, between 1902 and 9998.")
		}
		d = parsed
	}
	if err := v.Err(); err != nil {
		return Query{}, cal, err
	}
	cur, err := PeriodOf(period, d, cal.FiscalYearStart)
	if err != nil {
		return Query{}, cal, err
	}
	prev := cur.YearBefore(period, cal.FiscalYearStart)
	return Query{Tenant: p.Tenant(), Currency: currency, Location: cal.Location, FiscalYearStart: cal.FiscalYearStart, Kind: period,
		Current: cur, Previous: prev, Earlier: prev.YearBefore(period, cal.FiscalYearStart)}, cal, nil
}

// userDashboard is d for user's portfolio, with its work list.
func userDashboard(user uuid.UUID, d *reportsv1.Dashboard, w Worklist) *reportsv1.UserDashboard {
	return &reportsv1.UserDashboard{UserId: user.String(), Period: d.Period, Currency: d.Currency, Raised: d.Raised, Gifts: d.Gifts,
		Donors: d.Donors, NewDonors: d.NewDonors, RetainedDonors: d.RetainedDonors, RetentionRate: d.RetentionRate,
		AverageGift: d.AverageGift, Recurring: d.Recurring, ByFund: d.ByFund, ByDay: d.ByDay, OtherCurrencies: d.OtherCurrencies,
		PendingAcknowledgements: w.PendingAcknowledgements, LapsedInPortfolio: w.Lapsed, PastDueSchedules: d.Recurring.PastDue}
}
