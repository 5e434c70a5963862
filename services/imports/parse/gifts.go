package parse

import (
	"errors"
	"strconv"
	"strings"
	"time"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/money"
)

// The columns of a gifts file, in the documented order.
const (
	gExternalID = iota
	gContactExternalID
	gContactID
	gDate
	gAmount
	gCurrency
	gFund
	gCampaignID
	gPaymentMethod
	gCheckNumber
	gReference
)

var giftColumns = []string{"externalId", "contactExternalId", "contactId", "date", "amount", "currency", "fund",
	"campaignId", "paymentMethod", "checkNumber", "reference"}

// Limits of a gift row's texts.
const (
	maxFundLength        = 200
	maxCampaignIDLength  = 100
	maxCheckNumberLength = 50
	maxReferenceLength   = 200
)

// Payment methods of an imported gift. A row without one is External:
// the gift was taken in the system the file comes from.
var paymentMethods = []string{"Cash", "Check", "External"}

const defaultPaymentMethod = "External"

var giftsSpec = newSpec(KindGifts, giftColumns,
	[][]string{{"contactExternalId", "contactId"}, {"date"}, {"amount"}}, checkGift)

// checkGift checks a gifts row and fills row.Gift; currency is the
// tenant's default, the one an amount without a currency is in.
func checkGift(v *values, row *Row, currency string) {
	g := &Gift{GiftImportRow: &ordersv1.GiftImportRow{Row: v.num}}
	g.ExternalId = v.text(gExternalID, "externalId", maxExternalIDLength)
	contact(v, g)
	if d := v.get(gDate); d == "" {
		v.fail("date", "'date' must not be empty.")
	} else if _, err := time.Parse(time.DateOnly, d); err != nil || len(d) != len(time.DateOnly) {
		v.fail("date", "'date' must be a date written YYYY-MM-DD.")
	} else {
		g.Date = d
	}
	g.Currency = giftCurrency(v)
	g.AmountMinor = amount(v, g.Currency, currency)
	g.Fund = v.text(gFund, "fund", maxFundLength)
	g.CampaignId = v.text(gCampaignID, "campaignId", maxCampaignIDLength)
	if g.PaymentMethod = v.enum(gPaymentMethod, "paymentMethod", paymentMethods); g.PaymentMethod == "" && !v.failed("paymentMethod") {
		g.PaymentMethod = defaultPaymentMethod
	}
	g.CheckNumber = v.text(gCheckNumber, "checkNumber", maxCheckNumberLength)
	if g.CheckNumber != "" && g.PaymentMethod != "Check" && !v.failed("paymentMethod") {
		v.fail("checkNumber", "'checkNumber' is for a paymentMethod of Check only.")
	}
	g.Reference = v.text(gReference, "reference", maxReferenceLength)
	row.Gift = g
}

// contact checks that exactly one of contactExternalId and contactId names
// the gift's contact.
func contact(v *values, g *Gift) {
	g.ContactExternalID = v.text(gContactExternalID, "contactExternalId", maxExternalIDLength)
	raw := v.get(gContactID)
	switch {
	case raw != "" && g.ContactExternalID != "":
		v.fail("contactId", "Give either contactId or contactExternalId, not both.")
	case raw == "" && g.ContactExternalID == "" && !v.failed("contactExternalId"):
		v.fail("contactId", "Give contactId or contactExternalId.")
	case raw != "":
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			v.fail("contactId", "'contactId' must be a whole number greater than 0.")
		}
		g.ContactId = id
	}
}

// giftCurrency returns the row's currency in upper case, "" when the row
// names none.
func giftCurrency(v *values) string {
	c := strings.ToUpper(v.get(gCurrency))
	if c != "" && !money.Known(c) {
		v.fail("currency", "'currency' must be an ISO 4217 currency code such as USD.")
		return ""
	}
	return c
}

// amount returns the amount in minor units of the row's currency (or the
// tenant's default): a positive decimal with no more decimals than the
// currency has.
func amount(v *values, rowCurrency, tenantCurrency string) int64 {
	s := v.get(gAmount)
	if s == "" {
		v.fail("amount", "'amount' must not be empty.")
		return 0
	}
	cur := rowCurrency
	if cur == "" {
		cur = tenantCurrency
	}
	minor, err := money.ParseMinor(s, cur)
	switch {
	case errors.Is(err, money.ErrPrecision):
		v.fail("amount", "'amount' has more decimals than the currency has (%d).", money.Exponent(cur))
	case errors.Is(err, money.ErrRange):
		v.fail("amount", "'amount' is too large.")
	case err != nil || strings.HasPrefix(s, "+"):
		v.fail("amount", "'amount' must be a decimal number such as 25.00.")
	case minor <= 0:
		v.fail("amount", "'amount' must be greater than 0.")
	default:
		return minor
	}
	return 0
}
