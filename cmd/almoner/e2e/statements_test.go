package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

type statementDoc struct {
	StatementNumber string `json:"statementNumber"`
	Year            int    `json:"year"`
	Revision        int    `json:"revision"`
	Corrected       bool   `json:"corrected"`
	Donor           struct {
		Name string `json:"name"`
	} `json:"donor"`
	Gifts []struct {
		Date             string  `json:"date"`
		OrderNumber      int64   `json:"orderNumber"`
		Currency         string  `json:"currency"`
		Amount           float64 `json:"amount"`
		DeductibleAmount float64 `json:"deductibleAmount"`
	} `json:"gifts"`
	Totals []struct {
		Currency         string  `json:"currency"`
		GiftCount        int     `json:"giftCount"`
		TotalAmount      float64 `json:"totalAmount"`
		DeductibleAmount float64 `json:"deductibleAmount"`
	} `json:"totals"`
	Statement string `json:"statement"`
}

// backdate moves an order to a moment given in a time zone, as if it had
// been given then (the API records orders at the time they are made).
func backdate(t *testing.T, c *apptest.Cluster, tenantID, orderID, at string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE orders.orders SET created_at = $3::timestamptz WHERE tenant_id = $1 AND id = $2`, tenantID, orderID, at); err != nil {
		t.Fatal(err)
	}
}

// TestStatementTimeZoneAndCorrections gives around the new year in New
// York and checks which year each gift falls in, the totals per currency,
// the stable number, a correction after a refund, the PDF, the scope, the
// other tenant and the year's bounds.
func TestStatementTimeZoneAndCorrections(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	give := func(amount float64, currency, at string) (string, int64) {
		b := f.cashOrder(amount)
		b["currency"] = currency
		o := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusCreated).Map(t)
		backdate(t, c, tn.ID, o["id"].(string), at)
		return o["id"].(string), int64(o["orderNumber"].(float64))
	}
	_, before := give(11, "USD", "2024-12-31 23:59 America/New_York") // 2025 in UTC, 2024 in New York
	_, first := give(20, "USD", "2025-01-01 00:10 America/New_York")
	eve, last := give(100, "USD", "2025-12-31 23:30 America/New_York") // 2026-01-01 04:30 UTC
	_, euro := give(30, "EUR", "2025-06-15 12:00 America/New_York")
	_, after := give(7, "USD", "2026-01-01 00:30 America/New_York")
	voided, _ := give(50, "USD", "2025-03-01 12:00 America/New_York")
	c.Do(t, "POST", tPath(tn.ID, "/orders/", voided, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)

	path := tPath(tn.ID, fmt.Sprintf("/contacts/%d/giving-statements/2025", int64(f.contactID)))
	var s1, s2, s3 statementDoc
	c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &s1)
	var got []int64
	for _, g := range s1.Gifts {
		got = append(got, g.OrderNumber)
	}
	if fmt.Sprint(got) != fmt.Sprint([]int64{first, euro, last}) {
		t.Errorf("2025 orders %v, want %v (not %d of 2024 nor %d of 2026 in New York, nor the void)", got, []int64{first, euro, last}, before, after)
	}
	if len(s1.Gifts) == 3 && s1.Gifts[2].Date != "2025-12-31" {
		t.Errorf("New Year's Eve gift dated %s, want 2025-12-31", s1.Gifts[2].Date)
	}
	if len(s1.Totals) != 2 || s1.Totals[0].Currency != "EUR" || s1.Totals[0].TotalAmount != 30 || s1.Totals[1].Currency != "USD" ||
		s1.Totals[1].TotalAmount != 120 || s1.Totals[1].DeductibleAmount != 120 || s1.Totals[1].GiftCount != 2 {
		t.Errorf("totals %+v", s1.Totals)
	}
	if s1.Revision != 1 || s1.Corrected || !strings.HasPrefix(s1.StatementNumber, "S-2025-") || s1.Donor.Name != "Jane Donor" ||
		!strings.HasPrefix(s1.Statement, "No goods or services") {
		t.Errorf("first statement %+v", s1)
	}
	c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &s2)
	if s2.StatementNumber != s1.StatementNumber || s2.Revision != 1 || s2.Corrected {
		t.Errorf("asked again: %s rev %d corrected %v", s2.StatementNumber, s2.Revision, s2.Corrected)
	}

	// A refund of a 2025 gift after the statement went out: a correction.
	c.Do(t, "POST", tPath(tn.ID, "/orders/", eve, "/refunds"), tn.Key, map[string]any{"amount": 40}).Expect(t, http.StatusCreated)
	c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &s3)
	if s3.StatementNumber != s1.StatementNumber || s3.Revision != 2 || !s3.Corrected || len(s3.Totals) != 2 || s3.Totals[1].TotalAmount != 80 {
		t.Errorf("after the refund: %+v", s3)
	}
	// The other year has its own number.
	var s2026 statementDoc
	c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d/giving-statements/2026", int64(f.contactID))), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &s2026)
	if s2026.StatementNumber == s1.StatementNumber || len(s2026.Gifts) != 1 || s2026.Gifts[0].OrderNumber != after {
		t.Errorf("2026 statement %+v", s2026)
	}

	checkStatementPDF(t, c, tn, path, s3.StatementNumber)

	e := errorsOf(t, c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d/giving-statements/1899", int64(f.contactID))), tn.Key, nil).Expect(t, http.StatusBadRequest))
	if len(e["Year"]) == 0 {
		t.Errorf("year 1899: %v", e)
	}
	noScope := c.NewKey(t, tn.ID, "contacts:view", "reports:view")
	c.Do(t, "GET", path, noScope, nil).Expect(t, http.StatusForbidden)
	other := newOrderFixture(t, c)
	c.Do(t, "PUT", tPath(other.tn.ID, "/organization-profile"), other.tn.Key, receiptProfile).Expect(t, http.StatusOK)
	c.Do(t, "GET", tPath(other.tn.ID, fmt.Sprintf("/contacts/%d/giving-statements/2025", int64(f.contactID)+1000)), other.tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", path, other.tn.Key, nil).Expect(t, http.StatusNotFound)
}

// checkStatementPDF asks for the statement as a PDF and reads its text.
func checkStatementPDF(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, path, number string) {
	t.Helper()
	pdf := c.Do(t, "GET", path, tn.Key, nil, "Accept", "application/pdf").Expect(t, http.StatusOK)
	if ct := pdf.Header.Get("Content-Type"); ct != "application/pdf" {
		t.Fatalf("Content-Type %q", ct)
	}
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Skip("pdftotext missing (apt-get install poppler-utils): PDF text not checked")
	}
	file := filepath.Join(t.TempDir(), "statement.pdf")
	if err := os.WriteFile(file, pdf.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "pdftotext", "-layout", file, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	text := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{"Giving statement 2025 (corrected)", number, "Jane Donor", "Société d'Entraide Françoise", "2025-12-31",
		"USD 60.00", "EUR 30.00", "No goods or services"} {
		if !strings.Contains(text, want) {
			t.Errorf("PDF text lacks %q:\n%s", want, text)
		}
	}
}
