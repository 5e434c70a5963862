package wire

import (
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/services/orders/store"
)

// Decimal writes minor units as the wire's Decimal.
func Decimal(minor int64, currency string) *typev1.Decimal {
	return &typev1.Decimal{Value: money.FormatMinor(minor, currency)}
}

// ToAddress is a stored address as the API shows it.
func ToAddress(a *store.Address) *ordersv1.Address {
	if a == nil {
		return nil
	}
	return &ordersv1.Address{Line1: a.Line1, Line2: a.Line2, City: a.City, StateProvince: a.StateProvince, PostalCode: a.PostalCode, Country: a.Country}
}

// ToOrder is a stored order as the API shows it.
func ToOrder(o store.Order) *ordersv1.Order {
	c := o.Currency
	out := &ordersv1.Order{
		Id: o.ID.String(), OrderNumber: o.OrderNumber, ContactId: o.ContactID, OrderStatus: o.Status, Currency: c,
		DonationSubtotal: Decimal(o.DonationSubtotalMinor, c), ItemSubtotal: Decimal(o.ItemSubtotalMinor, c),
		TotalAmount: Decimal(o.TotalMinor, c), DeductibleAmount: Decimal(o.DeductibleMinor, c), RefundedAmount: Decimal(o.RefundedMinor, c),
		Donations: make([]*ordersv1.OrderDonation, 0, len(o.Donations)), Items: make([]*ordersv1.OrderItem, 0, len(o.Items)),
		Payments: make([]*ordersv1.OrderPayment, 0, len(o.Payments)), BillingAddress: ToAddress(o.Billing), ShippingAddress: ToAddress(o.Shipping),
		BatchId: o.BatchID.String(), RecurringDonationIds: []string{}, Notes: o.Notes,
		CreatedAt: timestamppb.New(o.CreatedAt), UpdatedAt: timestamppb.New(o.UpdatedAt),
	}
	if o.ScheduleID != nil {
		out.RecurringDonationIds = append(out.RecurringDonationIds, o.ScheduleID.String())
	}
	for _, id := range o.ScheduleIDs {
		out.RecurringDonationIds = append(out.RecurringDonationIds, id.String())
	}
	for _, d := range o.Donations {
		od := &ordersv1.OrderDonation{Id: d.ID.String(), FundId: d.FundID.String(), FundName: d.FundName, Amount: Decimal(d.AmountMinor, c),
			IsTaxDeductible: d.IsTaxDeductible, CampaignId: d.CampaignID, AppealId: d.AppealID}
		if d.Tribute != nil {
			od.Tribute = &ordersv1.Tribute{TributeType: d.Tribute.Type, Name: d.Tribute.Name, NotifyName: d.Tribute.NotifyName, NotifyEmail: d.Tribute.NotifyEmail}
		}
		out.Donations = append(out.Donations, od)
	}
	for _, it := range o.Items {
		out.Items = append(out.Items, &ordersv1.OrderItem{LineNumber: it.LineNumber, ItemId: it.ItemID.String(), Sku: it.SKU, Name: it.Name,
			Quantity: it.Quantity, UnitPrice: Decimal(it.UnitPriceMinor, c), FairMarketValue: Decimal(it.FairMarketValueMinor, c),
			LineTotal: Decimal(it.UnitPriceMinor*int64(it.Quantity), c)})
	}
	for _, p := range o.Payments {
		out.Payments = append(out.Payments, &ordersv1.OrderPayment{Id: p.ID.String(), PaymentMethod: p.Method, Amount: Decimal(p.AmountMinor, c),
			PaymentStatus: p.Status, RefundedAmount: Decimal(p.RefundedMinor, c), CheckNumber: p.CheckNumber, Reference: p.Reference,
			ProcessorReference: p.ProcessorReference, NextAction: nextAction(p)})
	}
	return out
}

// ToFund is a stored fund as the API shows it.
func ToFund(f store.Fund) *ordersv1.Fund {
	return &ordersv1.Fund{Id: f.ID.String(), Name: f.Name, Description: f.Description, IsTaxDeductible: f.IsTaxDeductible,
		ProcessingFeePercent: &typev1.Decimal{Value: money.FormatMinor(f.ProcessingFeeBP, "USD")}, IsActive: f.IsActive,
		CreatedAt: timestamppb.New(f.CreatedAt), UpdatedAt: timestamppb.New(f.UpdatedAt)}
}

// ToBatch is a stored batch as the API shows it.
func ToBatch(b store.Batch) *ordersv1.Batch {
	out := &ordersv1.Batch{Id: b.ID.String(), Name: b.Name, Description: b.Description, IsDaily: b.IsDaily, State: b.State, OrderCount: b.OrderCount,
		Totals: make([]*ordersv1.CurrencyTotal, 0, len(b.Totals)), CreatedAt: timestamppb.New(b.CreatedAt)}
	if b.BatchDate != nil {
		out.BatchDate = b.BatchDate.Format(time.DateOnly)
	}
	if b.ClosedAt != nil {
		out.ClosedAt = timestamppb.New(*b.ClosedAt)
	}
	for _, t := range b.Totals {
		out.Totals = append(out.Totals, &ordersv1.CurrencyTotal{Currency: t.Currency, OrderCount: t.OrderCount, Total: Decimal(t.TotalMinor, t.Currency)})
	}
	return out
}

// DateString is a date as YYYY-MM-DD, "" for none.
func DateString(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.DateOnly)
}

// ToSchedule is a stored schedule as the API shows it.
func ToSchedule(s store.Schedule) *ordersv1.RecurringDonation {
	return &ordersv1.RecurringDonation{Id: s.ID.String(), ContactId: s.ContactID, Amount: Decimal(s.AmountMinor, s.Currency), Currency: s.Currency,
		Frequency: s.Frequency, StartDate: s.StartDate.Format(time.DateOnly), EndDate: DateString(s.EndDate), FundId: s.FundID.String(),
		CampaignId: s.CampaignID, PaymentMethod: s.PaymentMethod, Status: s.Status, NextChargeDate: DateString(s.NextChargeDate),
		FailedAttempts: s.FailedAttempts, FailureReason: s.FailureReason, OriginOrderId: s.OriginOrderID.String(),
		CreatedAt: timestamppb.New(s.CreatedAt), UpdatedAt: timestamppb.New(s.UpdatedAt), PausedUntil: DateString(s.PausedUntil), RetryOn: DateString(s.RetryOn)}
}

// IndexPath is a property path into a list: Items[2].
func IndexPath(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// ParseID parses a path id; anything else is not found.
func ParseID(s string) (uuid.UUID, bool) {
	id, err := uuid.Parse(s)
	return id, err == nil
}

// nextAction tells the donor's browser how to finish a payment that
// waits for them (3-D Secure through Stripe.js).
func nextAction(p store.Payment) *ordersv1.NextAction {
	if p.Status != store.PaymentRequiresAction || p.ClientSecret == "" {
		return nil
	}
	return &ordersv1.NextAction{Type: "use_stripe_sdk", ClientSecret: p.ClientSecret}
}
