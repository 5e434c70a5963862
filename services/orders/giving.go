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
	s *Service
}

// GetContactGivingSummary returns a contact's giving per currency, recent
// orders and active schedules. Voided orders and refunded amounts are
// excluded; currencies are never added together.
func (g *givingServer) GetContactGivingSummary(ctx context.Context, req *ordersv1.GetContactGivingSummaryRequest) (*ordersv1.GetContactGivingSummaryResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.ContactsView, scopes.DonationsView)
	if err != nil {
		return nil, err
	}
	if req.GetContactId() <= 0 {
		return nil, apperr.Invalid(apperr.Violation{Field: "ContactId", Message: "Contact id must be greater than 0."})
	}
	limit := req.GetRecentOrderLimit()
	switch {
	case limit <= 0:
		limit = 5
	case limit > 50:
		limit = 50
	}
	return g.s.givingSummary(ctx, p, req.GetContactId(), limit)
}
