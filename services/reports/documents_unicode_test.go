package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/pdftext"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

// TestDocumentsPrintAnyName renders an order receipt and a giving
// statement (the year-end run's PDFs are statements) whose donor, address,
// fund, organization and signatory ("Sig 💩") hold names from every
// plane, right-to-left text and combining marks, and reads them back with
// pdftotext: an astral character prints as U+FFFD, nothing fails.
func TestDocumentsPrintAnyName(t *testing.T) {
	t.Parallel()
	prof := store.Profile{Country: "US", TimeZone: "America/New_York", SignatoryName: "Sig 💩"}
	org := &reportsv1.ReceiptOrganization{LegalName: "Société 💩 Ωμέγα", TaxId: "12-𠀋\uFFFF", SignatoryName: "Sig 💩",
		SignatoryTitle: "מנהלת", Footer: "مرحبا علي", Address: &reportsv1.PostalAddress{Line1: "1 Straße 🏴\U000E0067\U000E007F", Country: proto.String("US")}}
	donor := &reportsv1.ReceiptDonor{ContactId: 1, Name: "Zoë 王 👩\u200d👩\u200d👧", Address: &reportsv1.PostalAddress{Line1: "Rene\u0301e Street", City: proto.String("שלום"), Country: proto.String("IL")}}
	usd := &typev1.Decimal{Value: "10.00"}
	receipt := &reportsv1.Receipt{ReceiptNumber: "R-000001", IssuedAt: timestamppb.New(time.Now()), Organization: org, Donor: donor,
		OrderNumber: 1, Currency: "USD", TotalAmount: usd, DeductibleAmount: usd, GoodsAndServicesValue: &typev1.Decimal{Value: "0.00"},
		Gifts: []*reportsv1.ReceiptGift{{Date: "2026-01-01", FundName: "Fund 💩 Дети", Amount: usd, Deductible: true}}, Statement: "No goods."}
	statement := &reportsv1.GivingStatement{StatementNumber: "S-2026-000001", Year: 2026, Revision: 1, IssuedAt: timestamppb.New(time.Now()),
		Organization: org, Donor: donor, Statement: "No goods.",
		Gifts:  []*reportsv1.StatementGift{{Date: "2026-01-01", OrderNumber: 1, Description: "Fund 💩 Дети", Currency: "USD", Amount: usd, DeductibleAmount: usd}},
		Totals: []*reportsv1.StatementTotal{{Currency: "USD", GiftCount: 1, TotalAmount: usd, DeductibleAmount: usd}}}
	want := []string{"Sig \uFFFD", "מנהלת", "مرحبا علي", "Société \uFFFD Ωμέγα", "12-\uFFFD\uFFFD", "1 Straße \uFFFD",
		"Zoë 王 \uFFFD", "Renée Street", "שלום", "Fund \uFFFD Дети"}
	for name, d := range map[string]render.Document{"receipt": receiptDocument(receipt, prof), "statement": statementDocument(statement, prof)} {
		var out bytes.Buffer
		if err := render.WriteDocument(d, &out); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		text := pdfText(t, out.Bytes())
		for _, w := range want {
			if !strings.Contains(text, noSpace(w)) {
				t.Errorf("%s: %q not in the PDF's text %q", name, w, text)
			}
		}
	}
}

// pdfText is pdf's text as pdftotext reads it, in NFC and without white
// space: pdftotext places the spaces of right-to-left lines as it sees fit.
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	return noSpace(pdftext.WithoutMarks(pdftext.Text(t, pdf)))
}

// noSpace is s in NFC without its white space.
func noSpace(s string) string {
	return strings.Join(strings.Fields(norm.NFC.String(s)), "")
}
