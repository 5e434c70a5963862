package recurring

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
)

// maxRetryDay bounds a retry day: a card declined two months ago is
// better asked of the donor again than charged.
const maxRetryDay = 60

// settingsServer serves the operators' RecurringSettingsService; the
// gateway maps none of it, and the internal key guards the port.
type settingsServer struct {
	ordersv1.UnimplementedRecurringSettingsServiceServer
	s *Service
}

// SetRecurringRetries sets a tenant's retry days (`almoner admin tenant
// recurring-retries`): in the tenant settings the auth service owns (the
// same as PUT /settings {"recurringRetryDays"}), then in orders' copy.
func (a *settingsServer) SetRecurringRetries(ctx context.Context, req *ordersv1.SetRecurringRetriesRequest) (*ordersv1.SetRecurringRetriesResponse, error) {
	if _, ok := authctx.FromIncoming(ctx); ok {
		return nil, apperr.Forbidden("Operators only: a tenant key cannot change recurring settings.")
	}
	tenant, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, apperr.Invalid(apperr.Violation{Field: "TenantId", Message: "'TenantId' must be a tenant id."})
	}
	days := req.GetDays()
	for i, d := range days {
		if d < 1 || d > maxRetryDay || (i > 0 && d <= days[i-1]) {
			return nil, apperr.Invalid(apperr.Violation{Field: "Days", Message: fmt.Sprintf("'Days' must increase, each from 1 to %d.", maxRetryDay)})
		}
	}
	if days == nil {
		days = []int32{}
	}
	if a.s.settings != nil {
		// The auth service owns the days (the tenant settings'
		// recurringRetryDays); orders keeps a copy of what it read.
		if days, err = a.s.settings.SetRetryDays(ctx, tenant.String(), days); err != nil {
			return nil, err
		}
	}
	stored, err := a.s.store.SetRetryDays(ctx, tenant, days)
	if err != nil {
		return nil, err
	}
	return &ordersv1.SetRecurringRetriesResponse{TenantId: tenant.String(), Days: stored}, nil
}
