package orders

import (
	"context"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

type givingServer struct {
	ordersv1.UnimplementedGivingServiceServer
}

// GetContactGivingSummary answers for a contact that has given nothing:
// no orders are recorded yet (stub). It authorizes like the real RPC will,
// so the dashboard's error paths are already the real ones.
func (givingServer) GetContactGivingSummary(ctx context.Context, req *ordersv1.GetContactGivingSummaryRequest) (*ordersv1.GetContactGivingSummaryResponse, error) {
	if _, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.ContactsView, scopes.DonationsView); err != nil {
		return nil, err
	}
	if req.GetContactId() <= 0 {
		return nil, apperr.Invalid(apperr.Violation{Field: "ContactId", Message: "Contact id must be greater than 0."})
	}
	return &ordersv1.GetContactGivingSummaryResponse{
		Totals:          []*ordersv1.CurrencyGivingTotal{},
		RecentOrders:    []*ordersv1.RecentOrder{},
		ActiveSchedules: []*ordersv1.ActiveSchedule{},
	}, nil
}
