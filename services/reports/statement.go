package reports

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/wirejson"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
	"github.com/almoner/almoner/services/reports/templates"
)

// Statement years: a statement covers a calendar year between these.
// From 1900, the first year a gift can be dated in (orders refuse an
// earlier one), so that every gift recorded can be on a statement.
const (
	minStatementYear = 1900
	maxStatementYear = 2100
)

// GetGivingStatement reads the contact's orders of the year in the
// profile's time zone, works out each one's figures as its receipt does,
// records the issue (number, revision) and answers JSON or a PDF.
func (x *receiptServer) GetGivingStatement(req *reportsv1.GetGivingStatementRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.DonationsView)
	if err != nil {
		return err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return err
	}
	year := int(req.GetYear())
	if year < minStatementYear || year > maxStatementYear {
		return apperr.Invalid(apperr.Violation{Field: "Year", Message: fmt.Sprintf("'Year' must be between %d and %d.", minStatementYear, maxStatementYear)})
	}
	prof, err := x.s.profile(ctx, tenant)
	if err != nil {
		return err
	}
	if err := missingProfileFields(prof); err != nil {
		return err
	}
	st, err := x.s.givingStatement(ctx, tenant, req.GetContactId(), year, prof, p.Actor())
	if err != nil {
		return err
	}
	if wantsPDF(metadata.ValueFromIncomingContext(ctx, "accept")) {
		d, err := x.s.statementPDF(ctx, tenant, st, prof, nil)
		if err != nil {
			return err
		}
		return sendPDF(stream, "statement-"+st.GetStatementNumber()+".pdf", d)
	}
	b, err := wirejson.Marshal(st)
	if err != nil {
		return fmt.Errorf("reports: encode statement: %w", err)
	}
	return stream.Send(&httpbody.HttpBody{ContentType: "application/json", Data: b})
}

// givingStatement makes and records a contact's statement of year; the
// year runs from 1 January 00:00 to the next in the profile's time zone,
// so a gift at 23:30 on 31 December in New York (04:30 UTC the next day)
// belongs to the year it was given in.
func (s *Service) givingStatement(ctx context.Context, tenant uuid.UUID, contactID int64, year int, prof store.Profile, actor string) (*reportsv1.GivingStatement, error) {
	from, to := yearBounds(year, location(prof))
	return s.statementIn(ctx, tenant, contactID, year, from, to, prof, actor)
}

// yearBounds is the calendar year in loc: [1 January 00:00, the next).
func yearBounds(year int, loc *time.Location) (time.Time, time.Time) {
	from := time.Date(year, time.January, 1, 0, 0, 0, 0, loc)
	return from, from.AddDate(1, 0, 0)
}

// statementIn makes and records a contact's statement of year, whose
// bounds are [from, to).
func (s *Service) statementIn(ctx context.Context, tenant uuid.UUID, contactID int64, year int, from, to time.Time, prof store.Profile, actor string) (*reportsv1.GivingStatement, error) {
	donor, err := s.store.Donor(ctx, tenant, contactID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Contact")
	}
	if err != nil {
		return nil, err
	}
	loc := location(prof)
	orders, err := s.store.ContactOrders(ctx, tenant, contactID, from, to)
	if err != nil {
		return nil, err
	}
	gifts, totals := statementLines(orders, loc)
	issued, err := s.store.Issue(ctx, tenant, store.KindStatement, statementSubject(contactID, year), statementHash(gifts), actor)
	if err != nil {
		return nil, err
	}
	return buildStatement(year, issued, prof, donor, gifts, totals), nil
}

// buildStatement assembles a statement from its parts.
func buildStatement(year int, issued store.Issued, prof store.Profile, donor store.Donor, gifts []*reportsv1.StatementGift, totals []*reportsv1.StatementTotal) *reportsv1.GivingStatement {
	return &reportsv1.GivingStatement{
		StatementNumber: statementNumber(year, issued.Number), Year: int32(year), Revision: int32(issued.Revision), Corrected: issued.Corrected(),
		IssuedAt: timestamppb.New(issued.IssuedAt), Organization: organizationBlock(prof), Donor: donorBlock(donor),
		Gifts: gifts, Totals: totals, Statement: statementDisclosure(totals),
	}
}

// statementSubject keys a statement in issued_documents: one per contact
// and year.
func statementSubject(contactID int64, year int) string { return fmt.Sprintf("%d/%d", contactID, year) }

// statementNumber prints a statement's number: S-, the year, and the
// tenant's sequence of statements.
func statementNumber(year int, n int64) string { return fmt.Sprintf("S-%d-%06d", year, n) }

// statementLines makes one gift per order and the totals per currency, in
// currency order.
func statementLines(orders []store.Order, loc *time.Location) ([]*reportsv1.StatementGift, []*reportsv1.StatementTotal) {
	gifts := make([]*reportsv1.StatementGift, 0, len(orders))
	sums := map[string]*figures{}
	counts := map[string]int32{}
	for _, o := range orders {
		f := receiptFigures(o)
		gifts = append(gifts, &reportsv1.StatementGift{Date: o.CreatedAt.In(loc).Format(time.DateOnly), OrderNumber: o.Number,
			Description: orderDescription(o), Currency: o.Currency, Amount: decimal(f.Total, o.Currency),
			GoodsAndServicesValue: decimal(f.Goods, o.Currency), DeductibleAmount: decimal(f.Deductible, o.Currency)})
		t := sums[o.Currency]
		if t == nil {
			t = &figures{Currency: o.Currency}
			sums[o.Currency] = t
		}
		t.Total, t.Goods, t.Deductible = t.Total+f.Total, t.Goods+f.Goods, t.Deductible+f.Deductible
		counts[o.Currency]++
	}
	totals := make([]*reportsv1.StatementTotal, 0, len(sums))
	for cur, t := range sums {
		totals = append(totals, &reportsv1.StatementTotal{Currency: cur, GiftCount: counts[cur], TotalAmount: decimal(t.Total, cur),
			GoodsAndServicesValue: decimal(t.Goods, cur), DeductibleAmount: decimal(t.Deductible, cur)})
	}
	sort.Slice(totals, func(i, j int) bool { return totals[i].GetCurrency() < totals[j].GetCurrency() })
	return gifts, totals
}

// orderDescription names an order's funds and items.
func orderDescription(o store.Order) string {
	var parts []string
	for _, d := range o.Donations {
		parts = append(parts, d.FundName)
	}
	for _, i := range o.Items {
		parts = append(parts, fmt.Sprintf("%s × %d", i.Name, i.Quantity))
	}
	return strings.Join(parts, ", ")
}

// statementHash is the SHA-256 of the statement's gifts: a statement whose
// gifts changed since it was issued (a refund, a void, a new gift dated in
// the year) is a correction.
func statementHash(gifts []*reportsv1.StatementGift) []byte {
	type line struct {
		N                    int64
		D, C, A, G, Ded, Des string
	}
	ls := make([]line, len(gifts))
	for i, g := range gifts {
		ls[i] = line{g.GetOrderNumber(), g.GetDate(), g.GetCurrency(), g.GetAmount().GetValue(), g.GetGoodsAndServicesValue().GetValue(),
			g.GetDeductibleAmount().GetValue(), g.GetDescription()}
	}
	b, _ := json.Marshal(ls)
	h := sha256.Sum256(b)
	return h[:]
}

// statementDisclosure is the statement's sentence about goods or services,
// per currency when the donor received any.
func statementDisclosure(totals []*reportsv1.StatementTotal) string {
	var goods []string
	for _, t := range totals {
		if t.GetGoodsAndServicesValue().GetValue() != decimal(0, t.GetCurrency()).GetValue() {
			goods = append(goods, fmt.Sprintf("%s %s (deductible: %s %s)", t.GetCurrency(), t.GetGoodsAndServicesValue().GetValue(),
				t.GetCurrency(), t.GetDeductibleAmount().GetValue()))
		}
	}
	if len(goods) == 0 {
		return "No goods or services were provided in exchange for these contributions."
	}
	return "In exchange for these contributions, the donor received goods or services valued at " + strings.Join(goods, "; ") +
		". Only the amount paid above that value is deductible."
}

// statementDocument lays a statement out for the PDF.
func statementDocument(st *reportsv1.GivingStatement, prof store.Profile) render.Document {
	title := fmt.Sprintf("Giving statement %d", st.GetYear())
	if st.GetCorrected() {
		title += " (corrected)"
	}
	d := render.Document{
		PageSize: render.PageSize(prof.Country), Title: title, Organization: organizationLines(st.GetOrganization()),
		Facts: [][2]string{{"Statement number", st.GetStatementNumber()}, {"Revision", strconv.Itoa(int(st.GetRevision()))},
			{"Issued", st.GetIssuedAt().AsTime().In(location(prof)).Format(time.DateOnly)}},
		Donor:     donorLines(st.GetDonor()),
		Columns:   []string{"Date", "Description", "$Amount", "$Deductible"},
		Statement: st.GetStatement(),
		Signatory: nonEmpty(st.GetOrganization().GetSignatoryName(), st.GetOrganization().GetSignatoryTitle()),
		Footer:    st.GetOrganization().GetFooter(),
	}
	for _, g := range st.GetGifts() {
		d.Rows = append(d.Rows, []string{g.GetDate(), fmt.Sprintf("#%d %s", g.GetOrderNumber(), g.GetDescription()),
			g.GetCurrency() + " " + g.GetAmount().GetValue(), g.GetCurrency() + " " + g.GetDeductibleAmount().GetValue()})
	}
	for _, t := range st.GetTotals() {
		cur := t.GetCurrency()
		d.Totals = append(d.Totals, [2]string{"Total " + cur + " (" + strconv.Itoa(int(t.GetGiftCount())) + " gifts)", cur + " " + t.GetTotalAmount().GetValue()},
			[2]string{"Deductible " + cur, cur + " " + t.GetDeductibleAmount().GetValue()})
	}
	return d
}

// statementPDF lays a statement out with the tenant's statement template
// and branding (brand, when the caller read it once for many).
func (s *Service) statementPDF(ctx context.Context, tenant uuid.UUID, st *reportsv1.GivingStatement, prof store.Profile, brand *render.Brand) (render.Document, error) {
	donor, err := s.store.Donor(ctx, tenant, st.GetDonor().GetContactId())
	if errors.Is(err, db.ErrNotFound) {
		// A year-end run's donor deleted since: the statement's own block.
		donor, err = store.Donor{ContactID: st.GetDonor().GetContactId(), Name: st.GetDonor().GetName()}, nil
	}
	if err != nil {
		return render.Document{}, err
	}
	b, err := s.brand.Get(ctx, tenant)
	if err != nil {
		return render.Document{}, err
	}
	suffix := ""
	if st.GetCorrected() {
		suffix = " (corrected)"
	}
	d, err := s.templated(ctx, tenant, templates.KindStatement, statementDocument(st, prof), statementMerge(st, donor, prof, b, s.cfg.Now()), suffix)
	if err != nil {
		return d, err
	}
	if brand != nil {
		d.Brand = *brand
		return d, nil
	}
	d.Brand, err = s.brand.Brand(ctx, tenant)
	return d, err
}
