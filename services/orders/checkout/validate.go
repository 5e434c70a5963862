package checkout

import (
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/services/orders/recurring/schedule"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// Limits of an order body. Amounts are capped so sums of lines stay far
// inside int64 minor units.
const (
	maxLines     = 100
	maxPayments  = 10
	maxSchedules = 10
	maxKey       = 255
	maxQuantity  = 100_000
	// maxUserAgent bounds a mandate's User-Agent; browsers send a few
	// hundred characters.
	maxUserAgent = 1000
)

// Payment methods and schedule frequencies.
var (
	paymentMethods = []string{"Cash", "Check", "Card", "Ach", "External"}
	tributeTypes   = []string{"InHonorOf", "InMemoryOf"}
)

// draft is a create body that passed its shape checks, before the funds,
// the contact and the stock were looked up.
type draft struct {
	currency  string
	donations []store.Donation
	fundIDs   []uuid.UUID
	items     []store.Item
	payments  []paymentDraft
	schedules []store.Schedule
	billing   *store.Address
	shipping  *store.Address
	batchID   *uuid.UUID
	notes     string
	// knownMethods are the rows of the tokens the payments and schedules
	// name, read once before anything is charged (checkMethodOwners).
	knownMethods map[string]store.KnownMethod
}

type paymentDraft struct {
	store.Payment
	token string
	// save keeps the method for later gifts (savePaymentMethod).
	save bool
	// mandate is the donor's acceptance of a bank-debit mandate the body
	// names (mandateAcceptance); nil: the request's own client is the record.
	mandate *mandateAcceptance
}

// mandateAcceptance is where and with what a donor accepted a debit
// mandate online.
type mandateAcceptance struct {
	ipAddress, userAgent string
}

// viaProcessor reports whether a payment is collected by a processor.
func (pd paymentDraft) viaProcessor() bool { return store.ViaProcessor(pd.Method) }

// validateCreate checks everything a create body says on its own. The
// currency is already resolved (the tenant's default when omitted). Each
// part of the body is checked by its own step; all violations are
// reported together.
func validateCreate(req *ordersv1.CreateOrderRequest, currency string, today time.Time) (draft, error) {
	var v apperr.Violations
	d := draft{currency: currency}
	if req.GetContactId() <= 0 {
		v.Add("ContactId", "Contact id must be greater than 0.")
	}
	if !money.Known(currency) {
		v.Add("Currency", "'%s' is not an ISO 4217 currency code.", wire.Truncate(currency, 8))
		return d, v.Err()
	}
	if !checkLineCounts(&v, req) {
		return d, v.Err()
	}
	validateDonations(&v, &d, req.GetDonations())
	validateItems(&v, &d, req.GetItems())
	validatePayments(&v, &d, req.GetPayments())
	validateEnvelope(&v, &d, req)
	if len(req.GetRecurringDonations()) > maxSchedules {
		v.Add("RecurringDonations", "An order creates at most %d recurring donations.", maxSchedules)
		return d, v.Err()
	}
	for i, in := range req.GetRecurringDonations() {
		sc := validateSchedule(&v, wire.IndexPath("RecurringDonations", i), in, d, today)
		d.schedules = append(d.schedules, sc)
		d.fundIDs = append(d.fundIDs, sc.FundID)
	}
	return d, v.Err()
}

// checkLineCounts needs at least one line; it reports false when there are
// so many lines that checking each is not worth it.
func checkLineCounts(v *apperr.Violations, req *ordersv1.CreateOrderRequest) bool {
	switch n := len(req.GetDonations()) + len(req.GetItems()); {
	case n == 0:
		v.Add("", "An order needs at least one donation or item line.")
	case len(req.GetDonations()) > maxLines || len(req.GetItems()) > maxLines:
		v.Add("", "An order holds at most %d donation lines and %d item lines.", maxLines, maxLines)
		return false
	}
	return true
}

// validateDonations checks the donation lines and their tributes.
func validateDonations(v *apperr.Violations, d *draft, in []*ordersv1.DonationInput) {
	for i, dl := range in {
		p := wire.IndexPath("Donations", i)
		fid, err := uuid.Parse(strings.TrimSpace(dl.GetFundId()))
		if err != nil {
			v.Add(p+".FundId", "'FundId' must be the id of a fund.")
		}
		dn := store.Donation{ID: uuid.Must(uuid.NewV7()), FundID: fid, AmountMinor: wire.Amount(v, p+".Amount", dl.GetAmount(), d.currency),
			CampaignID: wire.Text(v, p+".CampaignId", dl.GetCampaignId(), wire.MaxText, false), AppealID: wire.Text(v, p+".AppealId", dl.GetAppealId(), wire.MaxText, false)}
		if t := dl.GetTribute(); t != nil {
			tt := normalize.OneOf(tributeTypes, t.GetTributeType())
			if tt == "" {
				v.Add(p+".Tribute.TributeType", "'TributeType' must be InHonorOf or InMemoryOf.")
			}
			dn.Tribute = &store.Tribute{Type: tt, Name: wire.Text(v, p+".Tribute.Name", t.GetName(), wire.MaxText, true),
				NotifyName: wire.Text(v, p+".Tribute.NotifyName", t.GetNotifyName(), wire.MaxText, false), NotifyEmail: wire.Text(v, p+".Tribute.NotifyEmail", t.GetNotifyEmail(), 320, false)}
		}
		d.donations = append(d.donations, dn)
		d.fundIDs = append(d.fundIDs, fid)
	}
}

// validateItems checks the item lines; prices come from inventory later.
func validateItems(v *apperr.Violations, d *draft, in []*ordersv1.ItemInput) {
	for i, il := range in {
		p := wire.IndexPath("Items", i)
		id, err := uuid.Parse(strings.TrimSpace(il.GetItemId()))
		if err != nil {
			v.Add(p+".ItemId", "'ItemId' must be the id of an inventory item.")
		}
		switch q := il.GetQuantity(); {
		case q < 1:
			v.Add(p+".Quantity", "'Quantity' must be greater than 0.")
		case q > maxQuantity:
			v.Add(p+".Quantity", "'Quantity' must be %d or less.", maxQuantity)
		}
		d.items = append(d.items, store.Item{LineNumber: int32(i + 1), ItemID: id, Quantity: il.GetQuantity()})
	}
}

// validatePayments checks the payments: a known method, what each method
// needs (a check number, a reference, a processor token) and that only
// processor payments ask to be saved.
func validatePayments(v *apperr.Violations, d *draft, in []*ordersv1.PaymentInput) {
	if len(in) > maxPayments {
		v.Add("Payments", "An order holds at most %d payments.", maxPayments)
	} else if len(in) == 0 {
		v.Add("Payments", "'Payments' must hold at least one payment.")
	}
	for i, pl := range in {
		if i >= maxPayments {
			break
		}
		p := wire.IndexPath("Payments", i)
		m := normalize.OneOf(paymentMethods, pl.GetPaymentMethod())
		if m == "" {
			v.Add(p+".PaymentMethod", "'PaymentMethod' must be one of Cash, Check, Card, Ach, External.")
		}
		pd := paymentDraft{Payment: store.Payment{ID: uuid.Must(uuid.NewV7()), Method: m, AmountMinor: wire.Amount(v, p+".Amount", pl.GetAmount(), d.currency),
			CheckNumber: wire.Text(v, p+".CheckNumber", pl.GetCheckNumber(), 50, m == "Check"),
			Reference:   wire.Text(v, p+".Reference", pl.GetReference(), wire.MaxText, m == "External")}, token: strings.TrimSpace(pl.GetPaymentToken())}
		if (m == "Card" || m == "Ach") && pd.token == "" {
			v.Add(p+".PaymentToken", "'PaymentToken' must not be empty for %s payments.", m)
		}
		pd.save = pl.GetSavePaymentMethod()
		if pd.save && m != "" && !pd.viaProcessor() {
			v.Add(p+".SavePaymentMethod", "'SavePaymentMethod' applies only to Card and Ach payments.")
		}
		pd.mandate = validateMandate(v, p+".MandateAcceptance", m, pl.GetMandateAcceptance())
		d.payments = append(d.payments, pd)
	}
}

// validateMandate checks a payment's mandateAcceptance: only a bank debit
// has a mandate, and Stripe records both the address and the browser.
func validateMandate(v *apperr.Violations, field, method string, in *ordersv1.MandateAcceptance) *mandateAcceptance {
	if in == nil {
		return nil
	}
	if method != "" && method != "Ach" {
		v.Add(field, "'MandateAcceptance' applies only to Ach payments.")
		return nil
	}
	// A zone (fe80::1%eth0) names an interface of the form's server, not
	// where a donor is; Stripe would keep it as the mandate's address.
	ip, err := netip.ParseAddr(strings.TrimSpace(in.GetIpAddress()))
	if err != nil || ip.Zone() != "" {
		v.Add(field+".IpAddress", "'IpAddress' must be an IPv4 or IPv6 address without a zone.")
	}
	ip = ip.Unmap()
	ua := wire.Text(v, field+".UserAgent", in.GetUserAgent(), maxUserAgent, true)
	return &mandateAcceptance{ipAddress: ip.String(), userAgent: ua}
}

// validateEnvelope checks what surrounds the lines: addresses (and that
// one is given when it is to be saved), the batch and the notes.
func validateEnvelope(v *apperr.Violations, d *draft, req *ordersv1.CreateOrderRequest) {
	d.billing = wire.Address(v, "BillingAddress", req.GetBillingAddress())
	d.shipping = wire.Address(v, "ShippingAddress", req.GetShippingAddress())
	if req.GetSaveBillingToContact() && d.billing == nil {
		v.Add("BillingAddress", "'BillingAddress' must be given to save it to the contact.")
	}
	if req.GetSaveShippingToContact() && d.shipping == nil {
		v.Add("ShippingAddress", "'ShippingAddress' must be given to save it to the contact.")
	}
	if b := strings.TrimSpace(req.GetBatchId()); b != "" {
		id, err := uuid.Parse(b)
		if err != nil {
			v.Add("BatchId", "'BatchId' must be the id of a batch.")
		}
		d.batchID = &id
	}
	d.notes = wire.Text(v, "Notes", req.GetNotes(), wire.MaxNotes, false)
}

// validateSchedule checks one recurring donation of the body. Its payment
// method defaults to the order's first payment's.
func validateSchedule(v *apperr.Violations, p string, in *ordersv1.RecurringDonationInput, d draft, today time.Time) store.Schedule {
	fid, err := uuid.Parse(strings.TrimSpace(in.GetFundId()))
	if err != nil {
		v.Add(p+".FundId", "'FundId' must be the id of a fund.")
	}
	freq := normalize.OneOf(schedule.Frequencies, in.GetFrequency())
	if freq == "" {
		v.Add(p+".Frequency", "'Frequency' must be one of weekly, monthly, quarterly, annually.")
	}
	sc := store.Schedule{ID: uuid.Must(uuid.NewV7()), AmountMinor: wire.Amount(v, p+".Amount", in.GetAmount(), d.currency), Currency: d.currency,
		Frequency: freq, FundID: fid, CampaignID: wire.Text(v, p+".CampaignId", in.GetCampaignId(), wire.MaxText, false),
		PaymentToken: strings.TrimSpace(in.GetPaymentToken()), Status: store.ScheduleActive}
	sc.PaymentMethod = normalize.OneOf(paymentMethods, in.GetPaymentMethod())
	if in.GetPaymentMethod() == "" && len(d.payments) > 0 {
		sc.PaymentMethod, sc.PaymentToken = d.payments[0].Method, wire.FirstNonEmpty(sc.PaymentToken, d.payments[0].token)
	}
	if sc.PaymentMethod == "" {
		v.Add(p+".PaymentMethod", "'PaymentMethod' must be one of Cash, Check, Card, Ach, External.")
	}
	if store.ViaProcessor(sc.PaymentMethod) && sc.PaymentToken == "" {
		// Its method is saved from the token; without one it can never
		// be charged.
		v.Add(p+".PaymentToken", "'PaymentToken' must not be empty for %s recurring donations.", sc.PaymentMethod)
	}
	sc.StartDate, sc.EndDate = scheduleDates(v, p, in, freq, today)
	next := sc.StartDate
	sc.NextChargeDate = &next
	return sc
}

// scheduleDates reads a schedule's start and end dates. Not the creating
// order: by default the first installment is one period after today (the
// order itself is today's gift).
func scheduleDates(v *apperr.Violations, p string, in *ordersv1.RecurringDonationInput, freq string, today time.Time) (time.Time, *time.Time) {
	start := nextDate(today, freq, 1)
	if s := strings.TrimSpace(in.GetStartDate()); s != "" {
		t, err := time.Parse(time.DateOnly, s)
		switch {
		case err != nil:
			v.Add(p+".StartDate", "'StartDate' must be a date such as 2026-05-01.")
		case t.Before(today):
			v.Add(p+".StartDate", "'StartDate' must not be in the past.")
		default:
			start = t
		}
	}
	var end *time.Time
	if s := strings.TrimSpace(in.GetEndDate()); s != "" {
		t, err := time.Parse(time.DateOnly, s)
		switch {
		case err != nil:
			v.Add(p+".EndDate", "'EndDate' must be a date such as 2027-05-01.")
		case t.Before(start):
			v.Add(p+".EndDate", "'EndDate' must not be before 'StartDate'.")
		default:
			end = &t
		}
	}
	return start, end
}

// nextDate is n periods of freq after t (schedule.NextDate).
func nextDate(t time.Time, freq string, n int) time.Time { return schedule.NextDate(t, freq, n) }
