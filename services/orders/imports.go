package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store/importstore"
	"github.com/almoner/almoner/services/orders/wire"
)

// maxImportRows bounds one ImportGifts batch (import.proto).
const maxImportRows = 10_000

// importPaymentMethods are the methods an imported gift can have been
// paid with: processor payments cannot be imported (nothing here could
// refund them).
var importPaymentMethods = []string{"Cash", "Check", "External"}

// giftImportServer serves the internal GiftImportService the imports
// service's runner calls with each batch of a gifts file.
type giftImportServer struct {
	ordersv1.UnimplementedGiftImportServiceServer
	s *Service
}

// ImportGifts records one batch of a gift import: each row checked, then
// the batch recorded set-based (store/importstore). Imported gifts write no
// per-order audit rows, so they fire no per-order webhook events: the
// imports service fires import.updated per state change instead.
func (a *giftImportServer) ImportGifts(ctx context.Context, req *ordersv1.ImportGiftsRequest) (*ordersv1.ImportGiftsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ImportsManage)
	if err != nil {
		return nil, err
	}
	importID, err := validateImportRequest(req)
	if err != nil {
		return nil, err
	}
	currency, err := a.s.importCurrency(ctx, p, req.GetRows())
	if err != nil {
		return nil, err
	}
	today, err := a.s.giftToday(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	in := importstore.GiftImport{TenantID: p.Tenant(), ImportID: importID, DryRun: req.GetDryRun(),
		Rows: make([]importstore.GiftRow, len(req.GetRows()))}
	for i, r := range req.GetRows() {
		in.Rows[i] = checkGiftRow(r, currency, today)
	}
	results, err := a.s.imports.ImportGifts(ctx, in)
	if errors.Is(err, importstore.ErrImportBatchClosed) {
		return nil, apperr.Rule(wire.CodeImportBatchClosed, "The import's batch was closed before the import finished; its remaining gifts cannot be added to it.")
	}
	if err != nil {
		return nil, err
	}
	out := &ordersv1.ImportGiftsResponse{Results: make([]*ordersv1.GiftImportResult, len(results))}
	for i, r := range results {
		res := &ordersv1.GiftImportResult{Row: r.Row, Outcome: r.Outcome, Column: r.Column, Message: r.Message}
		if r.OrderID != nil {
			res.OrderId = r.OrderID.String()
		}
		out.Results[i] = res
	}
	return out, nil
}

// validateImportRequest checks the batch as a whole: an import id, at
// most maxImportRows rows, each numbered (from 1) once.
func validateImportRequest(req *ordersv1.ImportGiftsRequest) (uuid.UUID, error) {
	var v apperr.Violations
	id, err := uuid.Parse(req.GetImportId())
	if err != nil {
		v.Add("ImportId", "'ImportId' must be the import's UUID.")
	}
	if len(req.GetRows()) > maxImportRows {
		v.Add("Rows", "A batch holds at most %d rows.", maxImportRows)
	}
	seen := make(map[int64]bool, len(req.GetRows()))
	for i, r := range req.GetRows() {
		if r.GetRow() < 1 || seen[r.GetRow()] {
			v.Add(wire.IndexPath("Rows", i)+".Row", "'Row' must be a row number (from 1) given once per batch.")
			break
		}
		seen[r.GetRow()] = true
	}
	return id, v.Err()
}

// importCurrency is the tenant's default currency when a row names none:
// the principal's, else (the imports runner's System principal carries
// none) the tenant's settings. "" when every row names its currency.
func (s *Service) importCurrency(ctx context.Context, p authctx.Principal, rows []*ordersv1.GiftImportRow) (string, error) {
	needed := false
	for _, r := range rows {
		needed = needed || strings.TrimSpace(r.GetCurrency()) == ""
	}
	if !needed {
		return "", nil
	}
	if p.Currency != "" {
		return p.Currency, nil
	}
	if s.cfg.Tenants == nil {
		return p.DefaultCurrency() // the 503 naming the missing currency
	}
	c, err := s.cfg.Tenants.DefaultCurrency(ctx, p.TenantID)
	if err != nil {
		return "", peers.Upstream("The tenant's default currency cannot be read right now.", err)
	}
	return c, nil
}

// giftToday is today in the tenant's time zone (the organization
// profile's, through Config.Calendar; UTC without one), the day a gift's
// date is bounded by.
func (s *Service) giftToday(ctx context.Context, tenantID string) (time.Time, error) {
	if s.cfg.Calendar == nil {
		return tenantToday(s.cfg.Now(), time.UTC), nil
	}
	loc, err := s.cfg.Calendar.Location(ctx, tenantID)
	if err != nil {
		return time.Time{}, peers.Upstream("The organization's time zone cannot be read right now.", err)
	}
	return tenantToday(s.cfg.Now(), loc), nil
}

// checkGiftRow checks one row as CreateOrder checks an order's values and
// returns it for the store, refused (FailColumn) on the first value that
// is wrong; today is the tenant's (giftDateProblem). The fund and the
// external id are the store's to check. A check number or reference may
// be missing: histories rarely have them.
func checkGiftRow(r *ordersv1.GiftImportRow, defaultCurrency string, today time.Time) importstore.GiftRow {
	g := importstore.GiftRow{Row: r.GetRow(), ExternalID: strings.TrimSpace(r.GetExternalId()), ContactID: r.GetContactId(),
		AmountMinor: r.GetAmountMinor(), Currency: strings.ToUpper(strings.TrimSpace(r.GetCurrency())), Fund: strings.TrimSpace(r.GetFund()),
		CampaignID: strings.TrimSpace(r.GetCampaignId()), Method: normalize.OneOf(importPaymentMethods, r.GetPaymentMethod()),
		CheckNumber: strings.TrimSpace(r.GetCheckNumber()), Reference: strings.TrimSpace(r.GetReference())}
	if g.Currency == "" {
		g.Currency = defaultCurrency
	}
	date, dateErr := time.Parse(time.DateOnly, strings.TrimSpace(r.GetDate()))
	g.Date = date
	fail := func(column, format string, args ...any) importstore.GiftRow {
		g.FailColumn, g.FailMessage = column, fmt.Sprintf(format, args...)
		return g
	}
	switch {
	case utf8.RuneCountInString(g.ExternalID) > wire.MaxText:
		return fail("externalId", "'externalId' must be %d characters or fewer.", wire.MaxText)
	case g.ContactID <= 0:
		return fail("contactId", "The gift has no contact.")
	case dateErr != nil:
		return fail("date", "'date' must be a date such as 2024-05-01.")
	case giftDateProblem("date", date, today) != "":
		return fail("date", "%s", giftDateProblem("date", date, today))
	case !money.Known(g.Currency):
		return fail("currency", "'%s' is not a currency this tenant accepts (an ISO 4217 code).", wire.Truncate(g.Currency, 8))
	case g.AmountMinor <= 0:
		return fail("amount", "'amount' must be greater than 0.")
	case g.AmountMinor > wire.MaxMinor(g.Currency):
		return fail("amount", "'amount' must be %d or less.", wire.MaxAmountMajor)
	case utf8.RuneCountInString(g.CampaignID) > wire.MaxText:
		return fail("campaignId", "'campaignId' must be %d characters or fewer.", wire.MaxText)
	case g.Method == "":
		return fail("paymentMethod", "'paymentMethod' must be one of Cash, Check, External.")
	case utf8.RuneCountInString(g.CheckNumber) > 50:
		return fail("checkNumber", "'checkNumber' must be 50 characters or fewer.")
	case utf8.RuneCountInString(g.Reference) > wire.MaxText:
		return fail("reference", "'reference' must be %d characters or fewer.", wire.MaxText)
	}
	return g
}

// Gift dates. A gift is refused before minGiftDate and after the day
// after the tenant's today: a year-end statement covers 1900 to 2100
// (services/reports), so a gift dated 9999-12-31 or 0001-01-01 could be
// recorded and never receipted. The day after today leaves room for a
// gift entered where the day has already turned.
var minGiftDate = time.Date(1900, time.January, 1, 0, 0, 0, 0, time.UTC)

// tenantToday is now's calendar day in the tenant's time zone loc (UTC
// when nil), as a UTC midnight like store.Day, so dates compare as days.
func tenantToday(now time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// giftDateProblem says why a gift dated day (a UTC midnight) is refused
// on the tenant's today, "" when it is not; field names the value in the
// message.
func giftDateProblem(field string, day, today time.Time) string {
	latest := today.AddDate(0, 0, 1)
	if day.Before(minGiftDate) || day.After(latest) {
		return fmt.Sprintf("'%s' must be between %s and %s (the day after today in the organization's time zone).",
			field, minGiftDate.Format(time.DateOnly), latest.Format(time.DateOnly))
	}
	return ""
}
