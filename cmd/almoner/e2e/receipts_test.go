package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// receiptProfile is a complete organization profile with accented names.
var receiptProfile = map[string]any{
	"legalName": "Société d'Entraide Françoise", "taxId": "12-3456789",
	"address": map[string]any{"line1": "12 Rue de l'Église", "city": "Montréal", "stateProvince": "QC", "postalCode": "H2X 1Y4", "country": "CA"},
	"email":   "dons@entraide.example", "phone": "+1 514 555 0100", "website": "https://entraide.example",
	"signatoryName": "Zoë Müller", "signatoryTitle": "Trésorière", "receiptFooter": "Merci — thank you for your gift.",
	"country": "US", "timeZone": "America/New_York",
}

// TestOrganizationProfile reads the defaults, refuses bad values with
// their property paths, saves, reads back, accepts its own GET back, and
// checks scopes, the other tenant and the audit row.
func TestOrganizationProfile(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	path := tPath(tn.ID, "/organization-profile")

	// The tenant's own rows (its creation) share its id.
	audits := auditCount(t, c, tn.ID, tn.ID)
	def := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if def["country"] != "US" || def["timeZone"] != "America/New_York" || def["legalName"] != "" || def["updatedAt"] != nil {
		t.Errorf("default profile = %v", def)
	}

	bad := map[string]any{"legalName": "X", "receiptFooter": strings.Repeat("é", 2001), "country": "usa", "timeZone": "Mars/Olympus",
		"email": "not an address", "address": map[string]any{"line1": "1 Main St", "country": "Canada"}}
	e := errorsOf(t, c.Do(t, "PUT", path, tn.Key, bad).Expect(t, http.StatusBadRequest))
	for _, k := range []string{"ReceiptFooter", "Country", "TimeZone", "Email", "Address.Country"} {
		if len(e[k]) == 0 {
			t.Errorf("errors = %v, want %s", e, k)
		}
	}

	saved := c.Do(t, "PUT", path, tn.Key, receiptProfile).Expect(t, http.StatusOK).Map(t)
	got := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["legalName"] != receiptProfile["legalName"] || got["signatoryName"] != "Zoë Müller" || got["updatedAt"] == nil ||
		got["address"].(map[string]any)["city"] != "Montréal" {
		t.Errorf("profile = %v", got)
	}
	if got["updatedAt"] != saved["updatedAt"] {
		t.Errorf("GET updatedAt %v, PUT answered %v", got["updatedAt"], saved["updatedAt"])
	}
	// What GET returns can be sent back as it is.
	c.Do(t, "PUT", path, tn.Key, got).Expect(t, http.StatusOK)
	if n := auditCount(t, c, tn.ID, tn.ID) - audits; n != 1 {
		t.Errorf("%d audit rows for the profile, want 1 (created; the unchanged PUT writes none)", n)
	}
	changed := map[string]any{}
	for k, v := range receiptProfile {
		changed[k] = v
	}
	changed["timeZone"] = "Europe/Paris"
	if c.Do(t, "PUT", path, tn.Key, changed).Expect(t, http.StatusOK).Map(t)["timeZone"] != "Europe/Paris" {
		t.Error("time zone not saved")
	}
	if n := auditCount(t, c, tn.ID, tn.ID) - audits; n != 2 {
		t.Errorf("%d audit rows for the profile, want 2", n)
	}

	viewer := c.NewKey(t, tn.ID, "donations:view", "reports:manage")
	for m, body := range map[string]any{"GET": nil, "PUT": receiptProfile} {
		r := c.Do(t, m, path, viewer, body).Expect(t, http.StatusForbidden)
		if !strings.Contains(string(r.Body), "tenant-settings:manage") {
			t.Errorf("%s 403 body %s does not name the scope", m, r.Body)
		}
	}
	other := c.NewTenant(t)
	c.Do(t, "GET", path, other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "PUT", path, other.Key, receiptProfile).Expect(t, http.StatusNotFound)
}

type receiptDoc struct {
	ReceiptNumber string `json:"receiptNumber"`
	IssuedAt      string `json:"issuedAt"`
	Organization  struct {
		LegalName, TaxId string
	} `json:"organization"`
	Donor struct {
		ContactID float64 `json:"contactId"`
		Name      string  `json:"name"`
		Address   *struct {
			Line1, City string
		} `json:"address"`
	} `json:"donor"`
	Gifts []struct {
		Date, FundName string
		Amount         float64
		Deductible     bool
	} `json:"gifts"`
	TotalAmount           float64 `json:"totalAmount"`
	DeductibleAmount      float64 `json:"deductibleAmount"`
	GoodsAndServicesValue float64 `json:"goodsAndServicesValue"`
	Statement             string  `json:"statement"`
}

// TestReceiptDisclosures gives every kind of order and checks each
// receipt's figures and disclosure sentence, the numbers, the refusals, a
// refund after the first issue, the PDF (read back with pdftotext), the
// scope and the other tenant.
func TestReceiptDisclosures(t *testing.T) {
	t.Parallel()
	c, _ := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	tn := st.tn
	receipt := func(orderID string) *apptest.Response {
		return c.Do(t, "GET", tPath(tn.ID, "/orders/", orderID, "/receipt"), tn.Key, nil, "Accept", "application/json")
	}
	order := func(body map[string]any) string {
		return c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	}
	donor := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": "Renée", "lastName": "Çelik-Østergård",
		"addresses": []any{map[string]any{"addressType": "Home", "isPrimary": true, "line1": "5 Avenue Québec", "city": "Trois-Rivières", "country": "CA"}}}).
		Expect(t, http.StatusCreated).Map(t)["id"].(float64)
	gift := func(amount float64, fund string, items int) map[string]any {
		b := map[string]any{"contactId": donor, "currency": "USD"}
		total := amount + 25*float64(items)
		if amount > 0 {
			b["donations"] = []any{map[string]any{"fundId": fund, "amount": amount}}
		}
		if items > 0 {
			b["items"] = []any{map[string]any{"itemId": st.item, "quantity": items}}
		}
		b["payments"] = []any{map[string]any{"paymentMethod": "Cash", "amount": total}}
		return b
	}
	plain := order(gift(100, st.fund, 0))
	// A book sold at its value: buying it gives nothing.
	bookBody := invItem("BOOK-" + tn.ID[:8])
	bookBody["fairMarketValue"] = 25
	book := c.Do(t, "POST", tPath(tn.ID, "/inventory"), tn.Key, bookBody).Expect(t, http.StatusCreated).Map(t)["id"].(string)

	// No profile yet: the fields a receipt needs are named.
	r := receipt(plain).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["LegalName"]) == 0 || len(e["TaxId"]) == 0 || len(e["Address.Line1"]) == 0 || !strings.Contains(string(r.Body), "Receipt.ProfileMissing") {
		t.Errorf("profile missing: %s", r.Body)
	}
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)

	below := order(gift(100, st.fund, 2)) // goods 20.00 below the 100.00 gift
	above := order(gift(10, st.fund, 2))  // goods 20.00 above the 10.00 gift
	itemOnlyBody := gift(0, "", 1)
	itemOnlyBody["items"] = []any{map[string]any{"itemId": book, "quantity": 1}}
	itemOnly := order(itemOnlyBody)
	nonDeductible := order(gift(40, st.plainFund, 0))
	cases := []struct {
		name, id                 string
		total, goods, deductible float64
		statement                string
	}{
		{"no goods", plain, 100, 0, 100, "No goods or services were provided"},
		{"goods below the gift", below, 150, 20, 130, "valued at USD 20.00. Only the amount paid above that value, USD 130.00, is deductible."},
		{"goods above the gift", above, 60, 20, 40, "valued at USD 20.00. Only the amount paid above that value, USD 40.00, is deductible."},
		{"item only", itemOnly, 25, 25, 0, "valued at USD 25.00. Only the amount paid above that value, USD 0.00, is deductible."},
		{"non-deductible fund", nonDeductible, 40, 0, 0, "No goods or services were provided"},
	}
	numbers := map[string]bool{}
	for _, tc := range cases {
		var got receiptDoc
		receipt(tc.id).Expect(t, http.StatusOK).JSON(t, &got)
		if got.TotalAmount != tc.total || got.GoodsAndServicesValue != tc.goods || got.DeductibleAmount != tc.deductible || !strings.Contains(got.Statement, tc.statement) {
			t.Errorf("%s: total %v goods %v deductible %v %q, want %v %v %v %q", tc.name, got.TotalAmount, got.GoodsAndServicesValue, got.DeductibleAmount, got.Statement,
				tc.total, tc.goods, tc.deductible, tc.statement)
		}
		if numbers[got.ReceiptNumber] || got.ReceiptNumber == "" {
			t.Errorf("%s: receipt number %q not unique", tc.name, got.ReceiptNumber)
		}
		numbers[got.ReceiptNumber] = true
		if got.Organization.LegalName != receiptProfile["legalName"] || got.Donor.Name != "Renée Çelik-Østergård" || got.Donor.Address == nil || got.Donor.Address.City != "Trois-Rivières" {
			t.Errorf("%s: blocks %+v / %+v", tc.name, got.Organization, got.Donor)
		}
	}

	// A refund after the first issue: same number, figures net of it
	// (30.00 apportioned 20.00 to the 100.00 gift, 10.00 to the 50.00 of
	// items).
	var first, again, refunded receiptDoc
	receipt(below).Expect(t, http.StatusOK).JSON(t, &first)
	receipt(below).Expect(t, http.StatusOK).JSON(t, &again)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", below, "/refunds"), tn.Key, map[string]any{"amount": 30}).Expect(t, http.StatusCreated)
	receipt(below).Expect(t, http.StatusOK).JSON(t, &refunded)
	if again.ReceiptNumber != first.ReceiptNumber || again.IssuedAt != first.IssuedAt {
		t.Errorf("receipt issued again: %s %s, then %s %s", first.ReceiptNumber, first.IssuedAt, again.ReceiptNumber, again.IssuedAt)
	}
	if refunded.ReceiptNumber != first.ReceiptNumber || refunded.TotalAmount != 120 || refunded.DeductibleAmount != 100 || refunded.GoodsAndServicesValue != 20 ||
		len(refunded.Gifts) != 1 || refunded.Gifts[0].Amount != 80 {
		t.Errorf("after the refund: %+v", refunded)
	}

	// Refusals: a voided order, a pending one (a bank debit not settled).
	voided := order(gift(50, st.fund, 0))
	c.Do(t, "POST", tPath(tn.ID, "/orders/", voided, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if r := receipt(voided).Expect(t, http.StatusBadRequest); !strings.Contains(string(r.Body), "Receipt.OrderVoided") {
		t.Errorf("voided: %s", r.Body)
	}
	pending := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, st.cardOrder("Ach", "pm_usBankAccount", 40)).Expect(t, http.StatusCreated).Map(t)
	if pending["orderStatus"] != "Pending" {
		t.Fatalf("bank debit order = %v", pending)
	}
	if r := receipt(pending["id"].(string)).Expect(t, http.StatusBadRequest); !strings.Contains(string(r.Body), "Receipt.OrderNotCompleted") {
		t.Errorf("pending: %s", r.Body)
	}

	checkReceiptPDF(t, c, tn, below, first.ReceiptNumber)

	// Scope, another tenant's order, an id that does not parse.
	noScope := c.NewKey(t, tn.ID, "contacts:view", "reports:view")
	if r := c.Do(t, "GET", tPath(tn.ID, "/orders/", plain, "/receipt"), noScope, nil).Expect(t, http.StatusForbidden); !strings.Contains(string(r.Body), "donations:view") {
		t.Errorf("403 body %s", r.Body)
	}
	other := newOrderFixture(t, c)
	c.Do(t, "PUT", tPath(other.tn.ID, "/organization-profile"), other.tn.Key, receiptProfile).Expect(t, http.StatusOK)
	c.Do(t, "GET", tPath(other.tn.ID, "/orders/", plain, "/receipt"), other.tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(tn.ID, "/orders/", plain, "/receipt"), other.tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(tn.ID, "/orders/not-an-id/receipt"), tn.Key, nil).Expect(t, http.StatusNotFound)
}

// checkReceiptPDF asks for the receipt as a PDF and reads its text back.
func checkReceiptPDF(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, orderID, number string) {
	t.Helper()
	pdf := c.Do(t, "GET", tPath(tn.ID, "/orders/", orderID, "/receipt"), tn.Key, nil, "Accept", "application/json;q=0.5, application/pdf").Expect(t, http.StatusOK)
	if ct := pdf.Header.Get("Content-Type"); ct != "application/pdf" || !bytes.HasPrefix(pdf.Body, []byte("%PDF")) {
		t.Fatalf("pdf Content-Type %q, starts %q", ct, pdf.Body[:min(8, len(pdf.Body))])
	}
	if cd := pdf.Header.Get("Content-Disposition"); cd != "inline; filename=receipt-"+number+".pdf" {
		t.Errorf("Content-Disposition %q", cd)
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext missing (apt-get install poppler-utils): PDF text not checked")
	}
	path := filepath.Join(t.TempDir(), "receipt.pdf")
	if err := os.WriteFile(path, pdf.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "pdftotext", "-layout", path, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	text := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{"Société d'Entraide Françoise", "Tax ID: 12-3456789", "Donation receipt", number, "Renée Çelik-Østergård",
		"Trois-Rivières", "General", "USD 80.00", "Deductible amount USD 100.00", "valued at USD 20.00", "Zoë Müller", "Trésorière",
		"Merci — thank you for your gift."} {
		if !strings.Contains(text, want) {
			t.Errorf("PDF text lacks %q:\n%s", want, text)
		}
	}
}
