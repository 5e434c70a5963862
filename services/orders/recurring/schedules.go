package recurring

import (
	"context"
	"errors"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

var scheduleStatuses = []string{store.ScheduleActive, store.SchedulePaused, store.SchedulePastDue, store.ScheduleCancelled, store.ScheduleCompleted}

// ScheduleServer serves /api/tenants/{tid}/recurring-donations.
type ScheduleServer struct {
	ordersv1.UnimplementedRecurringDonationServiceServer
	s *Service
}

// ListRecurringDonations returns a page of schedules, newest first.
func (a *ScheduleServer) ListRecurringDonations(ctx context.Context, req *ordersv1.ListRecurringDonationsRequest) (*ordersv1.ListRecurringDonationsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.RecurringDonationsView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	status := ""
	if req.GetStatus() != "" {
		if status = normalize.OneOf(scheduleStatuses, req.GetStatus()); status == "" {
			return nil, apperr.Invalid(apperr.Violation{Field: "Status", Message: "'Status' must be one of active, paused, past_due, cancelled, completed."})
		}
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.Schedule, int64, error) {
		return a.s.store.ListSchedules(ctx, p.Tenant(), req.ContactId, status, limit, offset)
	}, wire.ToSchedule)
	if err != nil {
		return nil, err
	}
	return &ordersv1.ListRecurringDonationsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// GetRecurringDonation reads one schedule.
func (a *ScheduleServer) GetRecurringDonation(ctx context.Context, req *ordersv1.GetRecurringDonationRequest) (*ordersv1.GetRecurringDonationResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.RecurringDonationsView)
	if err != nil {
		return nil, err
	}
	id, ok := wire.ParseID(req.GetScheduleId())
	if !ok {
		return nil, wire.ErrScheduleNotFound
	}
	s, err := a.s.store.GetSchedule(ctx, p.Tenant(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, wire.ErrScheduleNotFound
	}
	if err != nil {
		return nil, err
	}
	return &ordersv1.GetRecurringDonationResponse{RecurringDonation: wire.ToSchedule(s)}, nil
}

// CancelRecurringDonation cancels a schedule; cancelling twice is harmless.
func (a *ScheduleServer) CancelRecurringDonation(ctx context.Context, req *ordersv1.CancelRecurringDonationRequest) (*ordersv1.CancelRecurringDonationResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.RecurringDonationsCancel)
	if err != nil {
		return nil, err
	}
	id, ok := wire.ParseID(req.GetScheduleId())
	if !ok {
		return nil, wire.ErrScheduleNotFound
	}
	s, err := a.s.store.CancelSchedule(ctx, p.Tenant(), id, p.Actor())
	if err != nil {
		return nil, scheduleError(err)
	}
	return &ordersv1.CancelRecurringDonationResponse{RecurringDonation: wire.ToSchedule(s)}, nil
}
