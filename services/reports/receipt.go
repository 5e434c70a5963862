package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"strconv"
	"strings"

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
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
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
		return sendPDF(stream, "receipt-"+r.GetReceiptNumber()+".pdf", receiptDocument(r, prof))
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
