package render

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocumentPrintsLogo lays a receipt-like document out with a PNG and
// with a JPEG logo and reads the image back with pdfimages (poppler-utils):
// one image of the logo's pixel size.
func TestDocumentPrintsLogo(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 120, 60))
	for x := range 120 {
		img.Set(x, x/2, color.RGBA{B: 200, A: 255})
	}
	var pngData, jpegData bytes.Buffer
	if err := png.Encode(&pngData, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpegData, img, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		typ  string
		data []byte
		enc  string
	}{{"image/png", pngData.Bytes(), "image"}, {"image/jpeg", jpegData.Bytes(), "jpeg"}} {
		t.Run(tc.typ, func(t *testing.T) {
			d := Document{Title: "Donation receipt", Organization: []string{"Friends of the Library", "1 Main St"},
				Brand:   Brand{Logo: tc.data, LogoType: tc.typ, Primary: &[3]int{26, 82, 118}, Secondary: &[3]int{212, 230, 241}},
				Columns: []string{"Date", "Fund", "$Amount"}, Rows: [][]string{{"2026-11-25", "General", "USD 80.00"}}}
			var out bytes.Buffer
			if err := WriteDocument(d, &out); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "doc.pdf")
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			list, err := exec.CommandContext(t.Context(), "pdfimages", "-list", path).Output()
			if err != nil {
				t.Fatalf("pdfimages (apt-get install poppler-utils): %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(list)), "\n")
			// Two header lines, then the logo; a PNG's alpha would add an smask line.
			if len(lines) < 3 {
				t.Fatalf("pdfimages -list:\n%s", list)
			}
			f := strings.Fields(lines[2])
			if f[3] != "120" || f[4] != "60" || f[8] != tc.enc {
				t.Fatalf("image %v, want 120x60 %s", f, tc.enc)
			}
		})
	}
}
