package e2e

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// pngOf is a w×h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.NRGBA{R: 26, G: 82, B: 118, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestBranding walks the branding through the gateway: colors refused
// and saved, the logo refused for its type (415), its bytes (400), its
// dimensions (400) and its size (413), kept and read back, printed as an
// image in a receipt PDF (pdfimages -list); the scope and the other
// tenant.
func TestBranding(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	path, logo := tPath(tn.ID, "/branding"), tPath(tn.ID, "/branding/logo")

	if got := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["hasLogo"] != false || got["updatedAt"] != nil {
		t.Errorf("default branding = %v", got)
	}
	e := errorsOf(t, c.Do(t, "PUT", path, tn.Key, map[string]any{"primaryColor": "blue", "secondaryColor": "#12345", "signatureName": strings.Repeat("x", 201)}).
		Expect(t, http.StatusBadRequest))
	for _, k := range []string{"PrimaryColor", "SecondaryColor", "SignatureName"} {
		if len(e[k]) == 0 {
			t.Errorf("errors = %v, want %s", e, k)
		}
	}
	saved := c.Do(t, "PUT", path, tn.Key, map[string]any{"primaryColor": "#1A5276", "secondaryColor": "#D4E6F1", "signatureName": "Zoë Müller"}).
		Expect(t, http.StatusOK).Map(t)
	if saved["primaryColor"] != "#1A5276" || saved["signatureName"] != "Zoë Müller" || saved["updatedAt"] == nil {
		t.Errorf("saved branding = %v", saved)
	}

	c.Do(t, "GET", logo, tn.Key, nil).Expect(t, http.StatusNotFound)
	var gifData bytes.Buffer
	if err := gif.Encode(&gifData, image.NewPaletted(image.Rect(0, 0, 4, 4), []color.Color{color.Black}), nil); err != nil {
		t.Fatal(err)
	}
	c.Do(t, "PUT", logo, tn.Key, gifData.Bytes(), "Content-Type", "image/gif").Expect(t, http.StatusUnsupportedMediaType)
	c.Do(t, "PUT", logo, tn.Key, gifData.Bytes(), "Content-Type", "image/png").Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, c.Do(t, "PUT", logo, tn.Key, pngOf(t, 2001, 1), "Content-Type", "image/png").Expect(t, http.StatusBadRequest)); len(e["Logo"]) == 0 {
		t.Errorf("errors = %v, want Logo", e)
	}
	c.Do(t, "PUT", logo, tn.Key, make([]byte, 1<<20+1), "Content-Type", "image/png").Expect(t, http.StatusRequestEntityTooLarge)

	img := pngOf(t, 300, 120)
	if got := c.Do(t, "PUT", logo, tn.Key, img, "Content-Type", "image/png").Expect(t, http.StatusOK).Map(t); got["hasLogo"] != true ||
		got["logoWidth"] != float64(300) || got["logoHeight"] != float64(120) || got["primaryColor"] != "#1A5276" {
		t.Errorf("branding with logo = %v", got)
	}
	back := c.Do(t, "GET", logo, tn.Key, nil).Expect(t, http.StatusOK)
	if ct := back.Header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("logo Content-Type %q", ct)
	}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(back.Body)); err != nil || cfg.Width != 300 {
		t.Errorf("logo read back: %v %v", cfg, err)
	}

	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(50)).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	pdf := c.Do(t, "GET", tPath(tn.ID, "/orders/", order, "/receipt"), tn.Key, nil, "Accept", "application/pdf").Expect(t, http.StatusOK)
	if images := pdfImages(t, pdf.Body); len(images) != 1 || images[0][3] != "300" || images[0][4] != "120" {
		t.Errorf("receipt images %v, want the 300x120 logo", images)
	}

	narrow := c.NewKey(t, tn.ID, "donations:view", "reports:manage", "documents:manage")
	for m, body := range map[string]any{"GET": nil, "PUT": map[string]any{"primaryColor": "#000000"}} {
		r := c.Do(t, m, path, narrow, body)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "tenant-settings:manage") {
			t.Errorf("%s with no tenant-settings:manage: %d %s", m, r.Status, r.Body)
		}
	}
	c.Do(t, "GET", logo, narrow, nil).Expect(t, http.StatusForbidden)
	other := c.NewTenant(t)
	c.Do(t, "GET", path, other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "PUT", logo, other.Key, img, "Content-Type", "image/png").Expect(t, http.StatusNotFound)
}

// pdfImages lists a PDF's images as pdfimages -list (poppler-utils) does,
// one row of fields per image (3: width, 4: height, 8: encoding), leaving
// out soft masks (a PNG's alpha channel).
func pdfImages(t *testing.T, pdf []byte) [][]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "pdfimages", "-list", path).Output()
	if err != nil {
		t.Fatalf("pdfimages (apt-get install poppler-utils): %v", err)
	}
	var rows [][]string
	for i, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); i >= 2 && len(f) > 8 && f[2] == "image" {
			rows = append(rows, f)
		}
	}
	return rows
}
