package render

import (
	"strings"
	"unicode"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/text/unicode/bidi"
)

// Replacement is what prints in place of a character a PDF cannot hold:
// U+FFFD, which DejaVu Sans draws (a question mark in a diamond).
const Replacement = '\uFFFD'

// pdfDoc is fpdf with every text made printable before fpdf sees it.
// fpdf's UTF-8 fonts address glyphs by 16-bit codes (Identity-H, a
// 65,536-entry width table, a BMP-sized CIDToGIDMap): a rune above U+FFFF
// (an emoji, a CJK Extension B ideograph) panics with "index out of range
// [65536]" in CellFormat, GetStringWidth and the font's output, and is
// refused in MultiCell. The methods this package prints or measures text
// with are shadowed here, so no name, address, fund or profile text
// reaches fpdf as it came; a new way of printing text (Cell, Write, Text)
// needs its shadow too.
type pdfDoc struct{ *fpdf.Fpdf }

// CellFormat prints txt made printable, in visual order.
func (d pdfDoc) CellFormat(w, h float64, txt, border string, ln int, align string, fill bool, link int, linkStr string) {
	d.Fpdf.CellFormat(w, h, visual(Printable(txt)), border, ln, align, fill, link, linkStr)
}

// MultiCell prints txt made printable, each of its lines in visual order.
// Reordering happens before fpdf wraps a line, so a right-to-left line
// too long for the width keeps its words but shows its wrapped end first.
func (d pdfDoc) MultiCell(w, h float64, txt, border, align string, fill bool) {
	lines := strings.Split(Printable(txt), "\n")
	for i, l := range lines {
		lines[i] = visual(l)
	}
	d.Fpdf.MultiCell(w, h, strings.Join(lines, "\n"), border, align, fill)
}

// GetStringWidth measures s as it will print.
func (d pdfDoc) GetStringWidth(s string) float64 {
	return d.Fpdf.GetStringWidth(Printable(s))
}

// SetTitle sets the document's title made printable (fpdf encodes it as
// UTF-16 without surrogate pairs).
func (d pdfDoc) SetTitle(title string, isUTF8 bool) {
	d.Fpdf.SetTitle(Printable(title), isUTF8)
}

// Printable returns s as fpdf can print it, never failing:
//   - a rune above U+FFFF prints as Replacement; the joiners, variation
//     selectors, skin tones and tag characters that only modify it are
//     dropped, so an emoji sequence (👩‍👩‍👧, 👍🏽, a flag of tags) is
//     one Replacement;
//   - noncharacters (U+FFFE, U+FFFF, U+FDD0–U+FDEF), invalid UTF-8 and
//     control characters other than a newline print as Replacement (a tab
//     as a space);
//   - variation selectors (U+FE00–U+FE0F) are dropped: they print
//     nothing, and DejaVu Sans would draw a missing glyph's box for them.
//
// Other runes of the Basic Multilingual Plane are kept, those DejaVu Sans
// lacks (CJK ideographs among them) included: they print as the font's
// missing-glyph box, visibly, and the PDF's text (ToUnicode: every code is
// its own Unicode value) still holds the character, so pdftotext, copy
// and search read the real name.
func Printable(s string) string {
	if isPlainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	replaced := false // the last rune written replaced an astral rune
	joining := false  // and a zero-width joiner followed it
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteByte(' ')
		case modifier(r):
			// Printed with what it modifies, or not at all.
			continue
		case r == '\u200d' && replaced:
			// A joiner inside an emoji sequence: the emoji it joins is
			// part of the Replacement already written.
			joining = true
			continue
		case r > 0xFFFF:
			if !joining || !emojiPart(r) {
				b.WriteRune(Replacement)
			}
			replaced, joining = true, false
			continue
		case unicode.IsControl(r) || nonCharacter(r):
			b.WriteRune(Replacement)
		default:
			b.WriteRune(r)
		}
		replaced, joining = false, false
	}
	return b.String()
}

// isPlainASCII reports text fpdf prints as it is: printable ASCII and
// newlines (most names and every figure).
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			return false
		}
	}
	return true
}

// modifier reports runes that only change how the previous one is drawn:
// variation selectors, emoji skin tones and tag characters (U+E0000–
// U+E007F, the subdivision flags).
func modifier(r rune) bool {
	return (r >= 0xFE00 && r <= 0xFE0F) || (r >= 0xE0100 && r <= 0xE01EF) ||
		(r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0xE0000 && r <= 0xE007F)
}

// emojiPart reports an astral rune that a joiner attaches to the emoji
// before it (the pictographs of plane 1).
func emojiPart(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF
}

// nonCharacter reports code points Unicode reserves as never being text.
func nonCharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}

// visual returns one line in the order its characters are drawn left to
// right (the Unicode bidirectional algorithm's runs, rule L2 for one
// level of embedding): fpdf draws text in the order given, so a Hebrew or
// Arabic name given in logical order would print backwards. Arabic is not
// shaped (its letters print in their isolated forms). pdftotext puts
// right-to-left runs back in logical order, so the PDF's text reads as
// stored. A line without right-to-left characters is returned as it is.
func visual(line string) (out string) {
	if !hasRTL(line) {
		return line
	}
	// x/text's bidi is young: a panic in it must not fail a receipt, and
	// the line in logical order is still every character.
	defer func() {
		if recover() != nil {
			out = line
		}
	}()
	var p bidi.Paragraph
	if _, err := p.SetString(line); err != nil {
		return line
	}
	o, err := p.Order()
	if err != nil || o.NumRuns() == 0 {
		return line
	}
	runs := make([]string, o.NumRuns())
	for i := range runs {
		r := o.Run(i)
		runs[i] = r.String()
		if r.Direction() == bidi.RightToLeft {
			runs[i] = reverseClusters(runs[i])
		}
	}
	if !rtlParagraph(line) {
		return strings.Join(runs, "")
	}
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return strings.Join(runs, "")
}

// hasRTL reports a right-to-left character (Hebrew, Arabic, Syriac,
// Thaana, N'Ko…).
func hasRTL(s string) bool {
	for _, r := range s {
		if r < 0x0590 {
			continue
		}
		if c := bidiClass(r); c == bidi.R || c == bidi.AL {
			return true
		}
	}
	return false
}

// rtlParagraph applies rule P2: the first strong character sets the
// line's direction.
func rtlParagraph(s string) bool {
	for _, r := range s {
		switch bidiClass(r) {
		case bidi.L:
			return false
		case bidi.R, bidi.AL:
			return true
		}
	}
	return false
}

func bidiClass(r rune) bidi.Class {
	p, _ := bidi.LookupRune(r)
	return p.Class()
}

// reverseClusters reverses s by characters, keeping each combining mark
// after its base (a Hebrew point stays on its letter) and mirroring
// brackets, as drawing a right-to-left run left to right requires.
func reverseClusters(s string) string {
	var clusters []string
	start := 0
	for i, r := range s {
		if i > 0 && !unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) {
			clusters = append(clusters, s[start:i])
			start = i
		}
	}
	clusters = append(clusters, s[start:])
	var b strings.Builder
	b.Grow(len(s))
	for i := len(clusters) - 1; i >= 0; i-- {
		c := clusters[i]
		if len([]rune(c)) == 1 {
			c = bidi.ReverseString(c) // mirrors a bracket
		}
		b.WriteString(c)
	}
	return b.String()
}
