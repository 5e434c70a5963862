package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	pkgmoney "github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/wirejson"
	"github.com/almoner/almoner/services/reports/branding"
	"github.com/almoner/almoner/services/reports/letters"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
	"github.com/almoner/almoner/services/reports/templates"
)

type receiptServer struct {
	reportsv1.UnimplementedReceiptServiceServer
	s *Service
}

// GetOrderReceipt reads the order, works out its figures, records the
// issue (number, revision) and answers JSON or a PDF as the Accept header
// prefers.
func (x *receiptServer) GetOrderReceipt(req *reportsv1.GetOrderReceiptRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.DonationsView)
	if err != nil {
		return err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return err
	}
	o, err := x.s.loadOrder(ctx, tenant, req.GetOrderId())
	if err != nil {
		return err
	}
	if err := receivable(o); err != nil {
		return err
	}
	prof, err := x.s.profile(ctx, tenant)
	if err != nil {
		return err
	}
	if err := missingProfileFields(prof); err != nil {
		return err
	}
	donor, err := x.s.store.Donor(ctx, tenant, o.ContactID)
	if err != nil {
		return fmt.Errorf("reports: receipt of order %s: %w", o.ID, err)
	}
	fig := receiptFigures(o)
	issued, err := x.s.store.Issue(ctx, tenant, store.KindReceipt, o.ID.String(), fig.hash(), p.Actor())
	if err != nil {
		return err
	}
	r := buildReceipt(o, fig, prof, donor, issued)
	if wantsPDF(metadata.ValueFromIncomingContext(ctx, "accept")) {
		d, err := x.s.receiptPDF(ctx, tenant, r, donor, prof)
		if err != nil {
			return err
		}
		return sendPDF(stream, "receipt-"+r.GetReceiptNumber()+".pdf", d)
	}
	return sendJSON(stream, r)
}

// loadOrder reads an order; an id that does not parse or is not the
// tenant's is 404.
func (s *Service) loadOrder(ctx context.Context, tenant uuid.UUID, orderID string) (store.Order, error) {
	id, err := uuid.Parse(orderID)
	if err != nil {
		return store.Order{}, apperr.NotFound("Order")
	}
	o, err := s.store.Order(ctx, tenant, id)
	return db.Found(o, err, apperr.NotFound("Order"))
}

// receivable refuses the orders no receipt is given for: a voided one,
// and one whose payment has not completed (Pending, Failed).
func receivable(o store.Order) error {
	switch o.Status {
	case "Completed", "PartiallyRefunded", "Refunded":
		return nil
	case "Voided":
		return apperr.Rule("Receipt.OrderVoided", fmt.Sprintf("Order %d was voided: it has no receipt.", o.Number))
	}
	return apperr.Rule("Receipt.OrderNotCompleted", fmt.Sprintf("Order %d is %s: a receipt is issued once its payment has completed.", o.Number, o.Status))
}

// figures are an order's receipt amounts in minor units, net of refunds.
type figures struct {
	Currency   string
	Gifts      []store.DonationLine
	Total      int64
	Goods      int64
	Deductible int64
}

// receiptFigures works the amounts out. Every line is at its net amount
// (its share of refunds taken off, as every report reads it). The goods
// and services are the items the donor kept: quantity × fair market value
// of every item line not refunded in full. The deductible amount is what
// was paid to deductible funds and for items, less the value of the goods
// (never below zero): the IRS quid pro quo rule, where only the excess
// over the value received is a gift.
func receiptFigures(o store.Order) figures {
	f := figures{Currency: o.Currency, Gifts: o.Donations}
	var deductiblePaid int64
	for _, d := range o.Donations {
		f.Total += d.NetMinor
		if d.Deductible {
			deductiblePaid += d.NetMinor
		}
	}
	for _, i := range o.Items {
		f.Total += i.NetMinor
		deductiblePaid += i.NetMinor
		if i.NetMinor > 0 {
			f.Goods += i.Quantity * i.FairMarketValueMinor
		}
	}
	f.Deductible = max(deductiblePaid-f.Goods, 0)
	return f
}

// hash is the SHA-256 of the figures: a receipt whose figures changed
// since it was issued (a refund) is a new revision.
func (f figures) hash() []byte {
	b, _ := json.Marshal(f)
	h := sha256.Sum256(b)
	return h[:]
}

// disclosure is the receipt's statement about goods or services.
func disclosure(f figures) string {
	if f.Goods == 0 {
		return "No goods or services were provided in exchange for this contribution."
	}
	return fmt.Sprintf("In exchange for this contribution, the donor received goods or services valued at %s. Only the amount paid above that value, %s, is deductible.",
		amountText(f.Goods, f.Currency), amountText(f.Deductible, f.Currency))
}

func amountText(minor int64, currency string) string {
	return currency + " " + pkgmoney.FormatMinor(minor, currency)
}

func decimal(minor int64, currency string) *typev1.Decimal {
	return &typev1.Decimal{Value: pkgmoney.FormatMinor(minor, currency)}
}

// receiptNumber is a receipt's printed number, R- and the tenant's
// sequence of receipts.
func receiptNumber(n int64) string { return fmt.Sprintf("R-%06d", n) }

func buildReceipt(o store.Order, f figures, prof store.Profile, donor store.Donor, issued store.Issued) *reportsv1.Receipt {
	r := &reportsv1.Receipt{
		ReceiptNumber: receiptNumber(issued.Number), IssuedAt: timestamppb.New(issued.IssuedAt),
		Organization: organizationBlock(prof), Donor: donorBlock(donor), OrderNumber: o.Number, Currency: o.Currency,
		Gifts: []*reportsv1.ReceiptGift{}, TotalAmount: decimal(f.Total, o.Currency), DeductibleAmount: decimal(f.Deductible, o.Currency),
		GoodsAndServicesValue: decimal(f.Goods, o.Currency), Statement: disclosure(f),
	}
	date := o.CreatedAt.In(location(prof)).Format("2006-01-02")
	for _, g := range f.Gifts {
		r.Gifts = append(r.Gifts, &reportsv1.ReceiptGift{Date: date, FundName: g.FundName, Amount: decimal(g.NetMinor, o.Currency), Deductible: g.Deductible})
	}
	return r
}

func organizationBlock(p store.Profile) *reportsv1.ReceiptOrganization {
	return &reportsv1.ReceiptOrganization{LegalName: p.LegalName, TaxId: p.TaxID, Address: addressToProto(&p.Address), Email: p.Email,
		Phone: p.Phone, Website: p.Website, SignatoryName: p.SignatoryName, SignatoryTitle: p.SignatoryTitle, Footer: p.ReceiptFooter}
}

func donorBlock(d store.Donor) *reportsv1.ReceiptDonor {
	return &reportsv1.ReceiptDonor{ContactId: d.ContactID, Name: d.Name, Address: addressToProto(d.Address), Email: d.Email}
}

// receiptDocument lays a receipt out for the PDF.
func receiptDocument(r *reportsv1.Receipt, prof store.Profile) render.Document {
	d := render.Document{
		PageSize:     render.PageSize(prof.Country),
		Title:        "Donation receipt",
		Organization: organizationLines(r.GetOrganization()),
		Facts: [][2]string{{"Receipt number", r.GetReceiptNumber()}, {"Issued", r.GetIssuedAt().AsTime().In(location(prof)).Format("2006-01-02")},
			{"Order number", strconv.FormatInt(r.GetOrderNumber(), 10)}},
		Donor:     donorLines(r.GetDonor()),
		Columns:   []string{"Date", "Fund", "$Amount"},
		Statement: r.GetStatement(),
		Signatory: nonEmpty(r.GetOrganization().GetSignatoryName(), r.GetOrganization().GetSignatoryTitle()),
		Footer:    r.GetOrganization().GetFooter(),
	}
	cur := r.GetCurrency()
	for _, g := range r.GetGifts() {
		d.Rows = append(d.Rows, []string{g.GetDate(), g.GetFundName(), cur + " " + g.GetAmount().GetValue()})
	}
	d.Totals = [][2]string{{"Total paid", cur + " " + r.GetTotalAmount().GetValue()},
		{"Value of goods and services received", cur + " " + r.GetGoodsAndServicesValue().GetValue()},
		{"Deductible amount", cur + " " + r.GetDeductibleAmount().GetValue()}}
	return d
}

func organizationLines(o *reportsv1.ReceiptOrganization) []string {
	lines := []string{o.GetLegalName()}
	lines = append(lines, addressLines(o.GetAddress())...)
	lines = append(lines, "Tax ID: "+o.GetTaxId())
	if c := strings.Join(nonEmpty(o.GetEmail(), o.GetPhone(), o.GetWebsite()), " · "); c != "" {
		lines = append(lines, c)
	}
	return lines
}

func donorLines(d *reportsv1.ReceiptDonor) []string {
	return append([]string{d.GetName()}, addressLines(d.GetAddress())...)
}

// addressLines prints an address: street lines, then "City, ST 12345",
// then the country.
func addressLines(a *reportsv1.PostalAddress) []string {
	if a == nil {
		return nil
	}
	city := strings.Join(nonEmpty(a.GetCity(), strings.TrimSpace(a.GetStateProvince()+" "+a.GetPostalCode())), ", ")
	return nonEmpty(a.GetLine1(), a.GetLine2(), city, a.GetCountry())
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// wantsPDF reads the Accept header: a PDF when application/pdf is
// acceptable with a higher quality than application/json; JSON otherwise
// (no header, */*, a tie).
func wantsPDF(accept []string) bool {
	pdf, js := -1.0, -1.0
	pdfSpec, jsSpec := -1, -1
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(s, 64); err == nil {
					q = v
				}
			}
			// The most specific range that matches a type gives its
			// quality (RFC 9110, 12.5.1).
			match := func(typ string, best *float64, spec *int) {
				s := specificity(mt, typ)
				if s > *spec {
					*spec, *best = s, q
				}
			}
			match("application/pdf", &pdf, &pdfSpec)
			match("application/json", &js, &jsSpec)
		}
	}
	return pdf > 0 && pdf > js
}

// specificity is how closely the range mt matches typ: 2 exactly, 1 for
// type/*, 0 for */*, -1 not at all.
func specificity(mt, typ string) int {
	switch {
	case mt == typ:
		return 2
	case mt == "*/*":
		return 0
	case strings.HasSuffix(mt, "/*") && strings.HasPrefix(typ, strings.TrimSuffix(mt, "*")):
		return 1
	}
	return -1
}

// sendJSON answers m as JSON, written by the wire codec the gateway uses
// for every other message.
func sendJSON(stream grpc.ServerStreamingServer[httpbody.HttpBody], m *reportsv1.Receipt) error {
	b, err := wirejson.Marshal(m)
	if err != nil {
		return fmt.Errorf("reports: encode receipt: %w", err)
	}
	return stream.Send(&httpbody.HttpBody{ContentType: "application/json", Data: b})
}

// sendPDF renders d and streams it in chunks, named name.
func sendPDF(stream grpc.ServerStreamingServer[httpbody.HttpBody], name string, d render.Document) error {
	// Rendered whole before the first byte is sent, so a failure is still a
	// problem document; a one-page document is a few tens of kilobytes.
	var buf bytes.Buffer
	if err := render.WriteDocument(d, &buf); err != nil {
		return err
	}
	disp := mime.FormatMediaType("inline", map[string]string{"filename": name})
	if err := grpc.SetHeader(stream.Context(), metadata.Pairs("content-disposition", disp)); err != nil {
		return fmt.Errorf("reports: send document: %w", err)
	}
	cw := &chunkWriter{stream: stream, contentType: "application/pdf"}
	if _, err := cw.Write(buf.Bytes()); err != nil {
		return err
	}
	return cw.flush()
}

// Frame is templates.Frames: the document a template of kind prints in
// and its merge, for the tenant's order orderID or a sample gift. A
// preview issues nothing: a receipt's or statement's number prints as
// zeros.
func (s *Service) Frame(ctx context.Context, tenant uuid.UUID, kind, orderID string) (render.Document, templates.Merge, error) {
	prof, err := s.profile(ctx, tenant)
	if err != nil {
		return render.Document{}, templates.Merge{}, err
	}
	brand, err := s.brand.Get(ctx, tenant)
	if err != nil {
		return render.Document{}, templates.Merge{}, err
	}
	now := s.cfg.Now()
	today := now.In(location(prof)).Format(time.DateOnly)
	var d render.Document
	var m templates.Merge
	if orderID == "" {
		m = templates.Sample(mergeOrganization(prof, brand), today)
		d = letterDocument(prof, brand, []string{m.Contact.Name, m.Contact.Address.Line1}, today)
	} else if d, m, err = s.orderFrame(ctx, tenant, kind, orderID, prof, brand, now); err != nil {
		return d, m, err
	}
	if d.Brand, err = s.brand.Brand(ctx, tenant); err != nil {
		return d, m, err
	}
	return d, m, nil
}

// orderFrame is Frame for a real gift: a receipt or a one-gift statement
// as the service makes them, or a letter.
func (s *Service) orderFrame(ctx context.Context, tenant uuid.UUID, kind, orderID string, prof store.Profile, brand branding.Branding, now time.Time) (render.Document, templates.Merge, error) {
	o, err := s.loadOrder(ctx, tenant, orderID)
	if err != nil {
		return render.Document{}, templates.Merge{}, err
	}
	donor, err := s.store.Donor(ctx, tenant, o.ContactID)
	if err != nil {
		return render.Document{}, templates.Merge{}, fmt.Errorf("reports: frame of order %s: %w", o.ID, err)
	}
	issued := store.Issued{IssuedAt: now}
	r := buildReceipt(o, receiptFigures(o), prof, donor, issued)
	m := receiptMerge(r, donor, prof, brand, now)
	if m.Gift.TributeType, m.Gift.TributeName, err = s.store.Tribute(ctx, tenant, o.ID); err != nil {
		return render.Document{}, templates.Merge{}, err
	}
	switch kind {
	case templates.KindReceipt:
		return receiptDocument(r, prof), m, nil
	case templates.KindStatement:
		gifts, totals := statementLines([]store.Order{o}, location(prof))
		st := buildStatement(o.CreatedAt.In(location(prof)).Year(), issued, prof, donor, gifts, totals)
		return statementDocument(st, prof), statementMerge(st, donor, prof, brand, now), nil
	}
	return letterDocument(prof, brand, donorLines(r.GetDonor()), m.Today), m, nil
}

// letterDocument is an acknowledgement letter's frame: the organization,
// the date, the donor, the signature (the branding's, else the
// profile's signatory) and the footer; the template's body is its text.
func letterDocument(prof store.Profile, brand branding.Branding, donor []string, today string) render.Document {
	return render.Document{
		PageSize: render.PageSize(prof.Country), Title: "Thank you", Organization: organizationLines(organizationBlock(prof)),
		Facts: [][2]string{{"Date", today}}, Donor: donor, Signatory: signature(prof, brand), Footer: prof.ReceiptFooter,
	}
}

// signature is who signs a letter: the branding's signature, else the
// profile's signatory.
func signature(prof store.Profile, brand branding.Branding) []string {
	if brand.SignatureName != nil && *brand.SignatureName != "" {
		title := ""
		if brand.SignatureTitle != nil {
			title = *brand.SignatureTitle
		}
		return nonEmpty(*brand.SignatureName, title)
	}
	return nonEmpty(prof.SignatoryName, prof.SignatoryTitle)
}

func mergeOrganization(p store.Profile, b branding.Branding) templates.Organization {
	sig := signature(p, b)
	o := templates.Organization{LegalName: p.LegalName, TaxID: p.TaxID, Email: p.Email, Phone: p.Phone, Website: p.Website,
		Address: mergeAddress(&p.Address)}
	if len(sig) > 0 {
		o.SignatureName = sig[0]
	}
	if len(sig) > 1 {
		o.SignatureTitle = sig[1]
	}
	return o
}

func mergeAddress(a *store.Address) templates.Address {
	if a == nil {
		return templates.Address{}
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return templates.Address{Line1: a.Line1, Line2: deref(a.Line2), City: deref(a.City), StateProvince: deref(a.StateProvince),
		PostalCode: deref(a.PostalCode), Country: deref(a.Country)}
}

func mergeContact(d store.Donor) templates.Contact {
	return templates.Contact{FirstName: d.FirstName, LastName: d.LastName, Name: d.Name, Address: mergeAddress(d.Address)}
}

// receiptMerge is a receipt's merge fields; its funds are joined when the
// order gave to several.
func receiptMerge(r *reportsv1.Receipt, donor store.Donor, prof store.Profile, brand branding.Branding, now time.Time) templates.Merge {
	cur := r.GetCurrency()
	g := templates.Gift{Amount: cur + " " + r.GetTotalAmount().GetValue(), OrderNumber: strconv.FormatInt(r.GetOrderNumber(), 10),
		DeductibleAmount: cur + " " + r.GetDeductibleAmount().GetValue(), GoodsAndServicesValue: cur + " " + r.GetGoodsAndServicesValue().GetValue()}
	var funds []string
	for _, l := range r.GetGifts() {
		g.Date = l.GetDate()
		if !slices.Contains(funds, l.GetFundName()) {
			funds = append(funds, l.GetFundName())
		}
	}
	g.Fund = strings.Join(funds, ", ")
	return templates.Merge{Contact: mergeContact(donor), Organization: mergeOrganization(prof, brand),
		Today: now.In(location(prof)).Format(time.DateOnly), Gift: g}
}

// statementMerge is a statement's merge fields: its gifts, and the totals
// per currency joined ("USD 150.00; EUR 20.00").
func statementMerge(st *reportsv1.GivingStatement, donor store.Donor, prof store.Profile, brand branding.Branding, now time.Time) templates.Merge {
	m := templates.Merge{Contact: mergeContact(donor), Organization: mergeOrganization(prof, brand),
		Today: now.In(location(prof)).Format(time.DateOnly), Year: strconv.Itoa(int(st.GetYear()))}
	for _, g := range st.GetGifts() {
		m.Gifts = append(m.Gifts, templates.Gift{Amount: g.GetCurrency() + " " + g.GetAmount().GetValue(), Date: g.GetDate(),
			Fund: g.GetDescription(), OrderNumber: strconv.FormatInt(g.GetOrderNumber(), 10),
			DeductibleAmount: g.GetCurrency() + " " + g.GetDeductibleAmount().GetValue()})
	}
	var totals []string
	for _, t := range st.GetTotals() {
		totals = append(totals, t.GetCurrency()+" "+t.GetTotalAmount().GetValue())
	}
	m.Total = strings.Join(totals, "; ")
	return m
}

// templated fills the tenant's default template of kind into d. A
// template that fails to render leaves d as the system makes it (its
// title, no text): a receipt is never refused for its template, and its
// legal lines are printed by the system after the body whatever it says.
func (s *Service) templated(ctx context.Context, tenant uuid.UUID, kind string, d render.Document, m templates.Merge, suffix string) (render.Document, error) {
	t, err := s.templates.Default(ctx, tenant, kind)
	if err != nil {
		return d, err
	}
	filled, err := templates.Fill(ctx, t, m)
	if err != nil {
		s.logger.WarnContext(ctx, "reports: the default template does not render; printed without it", "kind", kind, "template", t.ID, "err", err)
		return d, nil
	}
	return filled.Apply(d, suffix), nil
}

// receiptPDF lays a receipt out with the tenant's branding and receipt
// template.
func (s *Service) receiptPDF(ctx context.Context, tenant uuid.UUID, r *reportsv1.Receipt, donor store.Donor, prof store.Profile) (render.Document, error) {
	brand, err := s.brand.Get(ctx, tenant)
	if err != nil {
		return render.Document{}, err
	}
	d, err := s.templated(ctx, tenant, templates.KindReceipt, receiptDocument(r, prof), receiptMerge(r, donor, prof, brand, s.cfg.Now()), "")
	if err != nil {
		return d, err
	}
	d.Brand, err = s.brand.Brand(ctx, tenant)
	return d, err
}

// LetterBase is letters.Frames: the tenant's letter frame, its
// organization's merge fields and its time zone.
func (s *Service) LetterBase(ctx context.Context, tenant uuid.UUID) (letters.Base, error) {
	prof, err := s.profile(ctx, tenant)
	if err != nil {
		return letters.Base{}, err
	}
	b, err := s.brand.Get(ctx, tenant)
	if err != nil {
		return letters.Base{}, err
	}
	d := letterDocument(prof, b, nil, "")
	d.Facts = nil
	if d.Brand, err = s.brand.Brand(ctx, tenant); err != nil {
		return letters.Base{}, err
	}
	return letters.Base{Document: d, Organization: mergeOrganization(prof, b), Location: location(prof), SenderName: prof.LegalName}, nil
}

// GiftMerge is letters.Frames: one gift's contact and gift merge fields
// (the receipt's figures) and the donor's block.
func (s *Service) GiftMerge(ctx context.Context, tenant, orderID uuid.UUID, loc *time.Location) (templates.Merge, []string, error) {
	o, err := s.store.Order(ctx, tenant, orderID)
	if err != nil {
		return templates.Merge{}, nil, err
	}
	donor, err := s.store.Donor(ctx, tenant, o.ContactID)
	if err != nil {
		return templates.Merge{}, nil, fmt.Errorf("reports: letter of order %s: %w", o.ID, err)
	}
	prof := store.Profile{TimeZone: loc.String()}
	r := buildReceipt(o, receiptFigures(o), prof, donor, store.Issued{})
	m := receiptMerge(r, donor, prof, branding.Branding{}, s.cfg.Now())
	m.Gift.Amount = amountText(donationNet(o), o.Currency)
	if m.Gift.TributeType, m.Gift.TributeName, err = s.store.Tribute(ctx, tenant, o.ID); err != nil {
		return templates.Merge{}, nil, err
	}
	return m, donorLines(r.GetDonor()), nil
}

// donationNet is what the order gave: its donation lines, net. A letter
// thanks the gift; the receipt's total also counts items bought.
func donationNet(o store.Order) int64 {
	var n int64
	for _, d := range o.Donations {
		n += d.NetMinor
	}
	return n
}
