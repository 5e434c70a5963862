package e2e

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestDocumentsPrintEmojiNames gives a donor named with an emoji, U+FFFF
// and a CJK ideograph, living in a Hebrew-named city, to a tenant whose
// signatory is "Sig 💩", and asks for everything rendered to PDF through
// the gateway: the order receipt and the giving statement are 200
// application/pdf, the year-end run succeeds and its ZIP downloads whole,
// and each PDF prints the names (astral characters and U+FFFF as U+FFFD).
// Before, each was a 500: fpdf panicked on runes above U+FFFF.
func TestDocumentsPrintEmojiNames(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	profile := map[string]any{}
	for k, v := range receiptProfile {
		profile[k] = v
	}
	profile["signatoryName"] = "Sig 💩"
	profile["legalName"] = "Société 🌍 d'Entraide"
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, profile).Expect(t, http.StatusOK)
	donor := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": "Poo 💩", "lastName": "Zoë\uFFFF王",
		"addresses": []any{map[string]any{"addressType": "Home", "isPrimary": true, "line1": "1 Rue 𠀋", "city": "תל אביב", "country": "IL"}}}).
		Expect(t, http.StatusCreated).Map(t)["id"].(float64)
	b := f.cashOrder(50)
	b["contactId"] = donor
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	wants := []string{"Poo \uFFFD Zoë\uFFFD王", "1 Rue \uFFFD", "תל אביב", "Sig \uFFFD", "Société \uFFFD d'Entraide"}

	receipt := c.Do(t, "GET", tPath(tn.ID, "/orders/", order, "/receipt"), tn.Key, nil, "Accept", "application/pdf").Expect(t, http.StatusOK)
	checkUnicodePDF(t, "receipt", receipt, wants)
	year := time.Now().In(mustLoc(t, "America/New_York")).Year()
	statement := c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d/giving-statements/%d", int64(donor), year)), tn.Key, nil, "Accept", "application/pdf").
		Expect(t, http.StatusOK)
	checkUnicodePDF(t, "statement", statement, wants)

	runs := tPath(tn.ID, "/tax-statements/runs")
	runPath := runs + "/" + c.Do(t, "POST", runs, tn.Key, map[string]any{"year": year}).Expect(t, http.StatusAccepted).Map(t)["id"].(string)
	var run map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		run = c.Do(t, "GET", runPath, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if run["status"] == "succeeded" || run["status"] == "failed" || time.Now().After(deadline) {
			break
		}
	}
	if run["status"] != "succeeded" || run["processed"] != float64(1) {
		t.Fatalf("run %v", run)
	}
	zipResp := c.Do(t, "GET", runPath+"/download?format=zip", tn.Key, nil).Expect(t, http.StatusOK)
	zr, err := zip.NewReader(bytes.NewReader(zipResp.Body), int64(len(zipResp.Body)))
	if err != nil || len(zr.File) != 1 {
		t.Fatalf("zip of %d bytes: %v", len(zipResp.Body), err)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	checkUnicodePDF(t, zr.File[0].Name, &apptest.Response{Header: http.Header{"Content-Type": {"application/pdf"}}, Body: pdf}, wants)
}

// checkUnicodePDF checks that r is a PDF whose text (pdftotext, from
// poppler-utils, which .ci/run installs) holds wants. Spaces are not
// compared: pdftotext places those of right-to-left lines as it sees fit.
func checkUnicodePDF(t *testing.T, name string, r *apptest.Response, wants []string) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/pdf" || !bytes.HasPrefix(r.Body, []byte("%PDF")) {
		t.Fatalf("%s: Content-Type %q, starts %q", name, ct, r.Body[:min(8, len(r.Body))])
	}
	file := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(file, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "pdftotext", "-enc", "UTF-8", file, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext (apt-get install poppler-utils): %v", err)
	}
	noSpace := func(s string) string {
		return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
			if (r >= 0x202A && r <= 0x202E) || r == 0x200E || r == 0x200F {
				return -1 // the directional marks pdftotext puts around right-to-left runs
			}
			return r
		}, s)), "")
	}
	text := noSpace(string(out))
	for _, w := range wants {
		if !strings.Contains(text, noSpace(w)) {
			t.Errorf("%s: PDF text lacks %q:\n%s", name, w, out)
		}
	}
}
