package render

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/almoner/almoner/pkg/pdftext"
	"github.com/almoner/almoner/services/reports/store"
)

// unicodeNames are names from every plane and script a donor, a fund or a
// profile may hold, with what pdftotext must read back: the name itself
// where every character is in the Basic Multilingual Plane (those DejaVu
// Sans lacks, like 王, print as its missing-glyph box but stay in the
// text), U+FFFD where fpdf cannot hold a character.
var unicodeNames = [][2]string{
	{"Zoë Müller-Østergård", "Zoë Müller-Østergård"},
	{"Ωμέγα Дмитрий Ivanović", "Ωμέγα Дмитрий Ivanović"},
	{"王小明 山田太郎 김민준", "王小明 山田太郎 김민준"},
	{"Rene\u0301e Ba\u0308r", "Renée Bär"}, // combining marks
	{"שלום כהן", "שלום כהן"},               // Hebrew, right to left
	{"مرحبا علي", "مرحبا علي"},             // Arabic, right to left
	{"Noa שלום Levi", "Noa שלום Levi"},     // both directions
	{"Poo 💩 Emoji", "Poo \uFFFD Emoji"},
	{"Family 👩\u200d👩\u200d👧 Tone 👍🏽 Heart ❤️", "Family \uFFFD Tone \uFFFD Heart ❤"},
	{"Flag 🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F end", "Flag \uFFFD end"}, // plane 14 tags
	{"Ext-B 𠀋 Ma", "Ext-B \uFFFD Ma"},                                                             // plane 2
	{"Private \U000F0000\U0010FFFD end", "Private \uFFFD\uFFFD end"},                              // planes 15, 16
	{"Non\uFFFFchar\uFFFE end", "Non\uFFFDchar\uFFFD end"},
	{"Ctl\x01a\x7fb\xffc", "Ctl\uFFFDa\uFFFDb\uFFFDc"}, // controls and invalid UTF-8
}

func TestPrintable(t *testing.T) {
	for _, c := range [][2]string{
		{"Sig 💩", "Sig \uFFFD"}, {"💩💩", "\uFFFD\uFFFD"}, {"A\uFFFF", "A\uFFFD"}, {"a\tb", "a b"},
		{"👩\u200d👩\u200d👧", "\uFFFD"}, {"👍🏽", "\uFFFD"}, {"x\u200dy", "x\u200dy"}, {"e\u0301", "e\u0301"},
		{"Zoë 王", "Zoë 王"}, {"line\nnext", "line\nnext"}, {"\xf0\x9f", "\uFFFD\uFFFD"}, {"\ufdd0", "\uFFFD"},
	} {
		if got := Printable(c[0]); got != c[1] {
			t.Errorf("Printable(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}

// TestDocumentPrintsEveryPlane puts every name of unicodeNames in every
// part of a document (organization, facts, donor, table, totals,
// statement, signatory, footer, title) and reads the PDF back.
func TestDocumentPrintsEveryPlane(t *testing.T) {
	for _, n := range unicodeNames {
		d := Document{
			Title: "Receipt " + n[0], Organization: []string{n[0], "Line " + n[0]}, Facts: [][2]string{{"Fact", n[0]}},
			Donor: []string{n[0], "Street " + n[0]}, Columns: []string{"Date", "Fund", "$Amount"},
			Rows: [][]string{{"2026-01-01", n[0], "USD 1.00"}}, Totals: [][2]string{{"Total " + n[0], "USD 1.00"}},
			Statement: "Statement " + n[0], Signatory: []string{n[0], "Title " + n[0]}, Footer: "Footer " + n[0] + "\nsecond line",
		}
		var out bytes.Buffer
		if err := WriteDocument(d, &out); err != nil {
			t.Errorf("%q: %v", n[0], err)
			continue
		}
		// Twelve fields hold the name. pdftotext rebuilds right-to-left
		// lines with its own idea of where the spaces and a line's
		// left-to-right words go, so spaces are not compared.
		text := noSpace(pdfText(t, out.Bytes()))
		if got := strings.Count(text, noSpace(n[1])); got < 12 {
			t.Errorf("%q: %q printed %d times, want 12:\n%s", n[0], n[1], got, text)
		}
	}
}

// TestExportPDFPrintsEveryPlane exports a report whose title and rows hold
// every name of unicodeNames.
func TestExportPDFPrintsEveryPlane(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter("pdf", NewTable("Donors 💩 שלום", testCols), Meta{Tenant: "t", Params: [][2]string{{"Name", "💩"}}, Generated: time.Now()}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range unicodeNames {
		if err := w.Row(store.Row{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), n[0], "USD", int64(100)}); err != nil {
			t.Fatalf("%q: %v", n[0], err)
		}
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	text := noSpace(pdfText(t, out.Bytes()))
	for _, n := range unicodeNames {
		if !strings.Contains(text, noSpace(n[1])) {
			t.Errorf("%q not in the PDF's text:\n%s", n[1], text)
		}
	}
	if !strings.Contains(text, noSpace("Donors \uFFFD שלום")) {
		t.Errorf("title not in the PDF's text:\n%s", text)
	}
}

// pdfText is pdf's text as pdftotext reads it, in NFC and without the
// directional marks it puts around right-to-left runs.
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	return norm.NFC.String(pdftext.WithoutMarks(pdftext.Text(t, pdf)))
}

// noSpace is s in NFC without its white space.
func noSpace(s string) string {
	return strings.Join(strings.Fields(norm.NFC.String(s)), "")
}

// FuzzDocumentText renders a document with any text in a name, a cell and
// the signatory: it never fails, and what reaches fpdf is valid UTF-8 of
// the Basic Multilingual Plane. (`go test -fuzz FuzzDocumentText`; the
// seeds run with the tests.)
func FuzzDocumentText(f *testing.F) {
	for _, n := range unicodeNames {
		f.Add(n[0])
	}
	f.Add("(שלום [x] עולם) 12")
	f.Fuzz(func(t *testing.T, s string) {
		p := Printable(s)
		if !utf8.ValidString(p) {
			t.Fatalf("Printable(%q) = %q, invalid UTF-8", s, p)
		}
		for _, r := range p {
			if r > 0xFFFF || r == 0xFFFF || r == 0xFFFE {
				t.Fatalf("Printable(%q) = %q holds %U", s, p, r)
			}
		}
		d := Document{Title: s, Organization: []string{s}, Donor: []string{s}, Columns: []string{"A", "B"},
			Rows: [][]string{{s, s}}, Signatory: []string{s}, Footer: s}
		if err := WriteDocument(d, io.Discard); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
