package orders

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

func (s *Service) givingSummary(ctx context.Context, p authctx.Principal, contactID int64, limit int32) (*ordersv1.GetContactGivingSummaryResponse, error) {
	tenantID := p.Tenant()
	sum, err := s.store.GivingSummary(ctx, tenantID, contactID, s.cfg.Now(), limit)
	if err != nil {
		return nil, err
	}
	out := &ordersv1.GetContactGivingSummaryResponse{Totals: []*ordersv1.CurrencyGivingTotal{}, RecentOrders: []*ordersv1.RecentOrder{}, ActiveSchedules: []*ordersv1.ActiveSchedule{}}
	gift := func(g *store.Gift, c string) *ordersv1.Gift {
		if g == nil {
			return nil
		}
		return &ordersv1.Gift{Date: timestamppb.New(g.Date), Amount: wire.Decimal(g.AmountMinor, c)}
	}
	for _, t := range sum.Totals {
		c := t.Currency
		out.Totals = append(out.Totals, &ordersv1.CurrencyGivingTotal{Currency: c, LifetimeTotal: wire.Decimal(t.LifetimeMinor, c), GiftCount: t.Count,
			FirstGift: gift(t.First, c), LastGift: gift(t.Last, c), LargestGift: gift(t.Largest, c),
			ThisYear: wire.Decimal(t.ThisYearMinor, c), LastYear: wire.Decimal(t.LastYearMinor, c)})
	}
	for _, o := range sum.Recent {
		out.RecentOrders = append(out.RecentOrders, &ordersv1.RecentOrder{Id: o.ID.String(), OrderNumber: o.OrderNumber, Date: timestamppb.New(o.CreatedAt),
			Total: wire.Decimal(o.TotalMinor, o.Currency), Currency: o.Currency, Status: o.Status})
	}
	for _, sc := range sum.Schedules {
		out.ActiveSchedules = append(out.ActiveSchedules, &ordersv1.ActiveSchedule{Id: sc.ID.String(), Amount: wire.Decimal(sc.AmountMinor, sc.Currency),
			Currency: sc.Currency, Frequency: sc.Frequency, NextChargeDate: wire.DateString(sc.NextChargeDate)})
	}
	return out, nil
}
