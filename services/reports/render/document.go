package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"codeberg.org/go-pdf/fpdf"
)

// Document is a letter-like document a donor is sent (a receipt, a giving
// statement): the organization's block, a title with its facts, the
// donor's block, a table of gifts, totals, the disclosure sentence, the
// signatory and the organization's footer.
type Document struct {
	// PageSize is "Letter" or "A4".
	PageSize string
	// Title is the document's title ("Donation receipt").
	Title string
	// Organization is the organization's name and lines under it
	// (address, tax id, contact details).
	Organization []string
	// Facts are label/value pairs under the title (number, dates).
	Facts [][2]string
	// Donor is the donor's name and address lines.
	Donor []string
	// Body is the template's text, in paragraphs, printed under the
	// donor's block (a letter is mostly this).
	Body []string
	// Columns are the table's headers; a column whose header starts with
	// "$" is right-aligned (the "$" is not printed).
	Columns []string
	// Rows are the table's cells.
	Rows [][]string
	// Totals are label/value pairs under the table.
	Totals [][2]string
	// Statement is the disclosure sentence.
	Statement string
	// Signatory is the signer's name and title.
	Signatory []string
	// Footer is the organization's free text.
	Footer string
	// Brand is the tenant's logo and colors (none: black on white). A
	// document kept as JSON (a letter run's) leaves it out: the run's
	// branding is put back once when the letters are laid out.
	Brand Brand `json:"-"`
}

// Brand is what a document prints of the tenant's branding.
type Brand struct {
	// Logo is a PNG or JPEG image (LogoType "image/png" or "image/jpeg")
	// as the branding package encoded it; printed at the top right.
	Logo     []byte
	LogoType string
	// Primary colors the title and the organization's name; Secondary
	// shades the table's header. Nil prints the defaults.
	Primary   *[3]int
	Secondary *[3]int
}

// Logo box: the most a logo takes at the top right, in mm; it keeps its
// aspect ratio inside.
const (
	logoMaxW = 45.0
	logoMaxH = 22.0
)

// brandLogo prints the logo at the top right, within the logo box.
func brandLogo(pdf pdfDoc, b Brand) {
	if len(b.Logo) == 0 {
		return
	}
	typ := "PNG"
	if b.LogoType == "image/jpeg" {
		typ = "JPG"
	}
	info := pdf.RegisterImageOptionsReader("logo", fpdf.ImageOptions{ImageType: typ}, bytes.NewReader(b.Logo))
	if info == nil || info.Width() <= 0 || info.Height() <= 0 {
		return
	}
	w, h := logoMaxW, logoMaxW*info.Height()/info.Width()
	if h > logoMaxH {
		w, h = logoMaxH*info.Width()/info.Height(), logoMaxH
	}
	pageW, _ := pdf.GetPageSize()
	_, top, right, _ := pdf.GetMargins()
	pdf.ImageOptions("logo", pageW-right-w, top, w, h, false, fpdf.ImageOptions{ImageType: typ}, 0, "")
}

// textColor sets the text color to c, or black.
func textColor(pdf pdfDoc, c *[3]int) {
	if c == nil {
		pdf.SetTextColor(0, 0, 0)
		return
	}
	pdf.SetTextColor(c[0], c[1], c[2])
}

// WriteDocument lays d out as a PDF with DejaVu Sans embedded (so every
// accented Latin name prints and pdftotext reads the text back) and
// writes it to w. A document is one page unless its table is long. Every
// text goes through Printable (pdfDoc), so any valid or invalid UTF-8
// prints; a panic inside fpdf all the same is this document's error,
// returned before anything was written to w (fpdf writes only at Output,
// once the document is complete).
func WriteDocument(d Document, w io.Writer) error {
	return WriteDocuments(d.PageSize, d.Title, w, func(add func(Document) error) error { return add(d) })
}

// WriteDocuments lays many documents out in one PDF (a letter run's), each
// from a new page, in the page size of the first; docs calls add once per
// document. fpdf holds the whole file until Output, a few kilobytes a
// page. A panic inside fpdf is the file's error, returned before anything
// was written to w.
func WriteDocuments(pageSize, title string, w io.Writer, docs func(add func(Document) error) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("render: document: fpdf: %v", r)
		}
	}()
	if pageSize == "" {
		pageSize = "A4"
	}
	pdf := pdfDoc{fpdf.New("P", "mm", pageSize, "")}
	pdf.AddUTF8FontFromBytes("dejavu", "", fontRegular)
	pdf.AddUTF8FontFromBytes("dejavu", "B", fontBold)
	pdf.SetAutoPageBreak(true, 15)
	pdf.SetCreator("Almoner", true)
	pdf.SetTitle(title, true)
	err = docs(func(d Document) error {
		pdf.AddPage()
		brandLogo(pdf, d.Brand)
		docHeader(pdf, d)
		docBody(pdf, d)
		docTable(pdf, d)
		docClosing(pdf, d)
		return pdf.Error()
	})
	if err == nil && pdf.PageCount() == 0 {
		// An empty run is still a file: one blank page.
		pdf.AddPage()
	}
	if err != nil {
		return fmt.Errorf("render: document: %w", err)
	}
	if err := pdf.Output(w); err != nil {
		return fmt.Errorf("render: document: %w", err)
	}
	return nil
}

// docHeader prints the organization's block, the title with its facts and
// the donor's block.
func docHeader(pdf pdfDoc, d Document) {
	for i, l := range d.Organization {
		if i == 0 {
			pdf.SetFont("dejavu", "B", 14)
			textColor(pdf, d.Brand.Primary)
			pdf.MultiCell(pageTextWidth(pdf, d.Brand), 7, l, "", "L", false)
			textColor(pdf, nil)
			pdf.SetFont("dejavu", "", 9)
			continue
		}
		pdf.MultiCell(pageTextWidth(pdf, d.Brand), 4.5, oneLine(l), "", "L", false)
	}
	if _, top, _, _ := pdf.GetMargins(); len(d.Brand.Logo) > 0 && pdf.GetY() < top+logoMaxH {
		// The title starts under the logo.
		pdf.SetY(top + logoMaxH)
	}
	pdf.Ln(6)
	pdf.SetFont("dejavu", "B", 16)
	textColor(pdf, d.Brand.Primary)
	pdf.CellFormat(0, 9, d.Title, "", 1, "L", false, 0, "")
	textColor(pdf, nil)
	pdf.SetFont("dejavu", "", 10)
	for _, f := range d.Facts {
		pdf.CellFormat(45, 5.5, f[0], "", 0, "L", false, 0, "")
		pdf.CellFormat(0, 5.5, f[1], "", 1, "L", false, 0, "")
	}
	pdf.Ln(4)
	for i, l := range d.Donor {
		if i == 0 {
			pdf.SetFont("dejavu", "B", 11)
		} else {
			pdf.SetFont("dejavu", "", 10)
		}
		pdf.MultiCell(0, 5.5, oneLine(l), "", "L", false)
	}
	pdf.Ln(6)
}

// docBody prints the template's paragraphs.
func docBody(pdf pdfDoc, d Document) {
	if len(d.Body) == 0 {
		return
	}
	pdf.SetFont("dejavu", "", 11)
	for _, p := range d.Body {
		pdf.MultiCell(0, 5.8, strings.ReplaceAll(p, "\r", ""), "", "L", false)
		pdf.Ln(3)
	}
	pdf.Ln(4)
}

// docTable prints the gifts and the totals under them.
func docTable(pdf pdfDoc, d Document) {
	if len(d.Columns) == 0 {
		return
	}
	pageW, _ := pdf.GetPageSize()
	left, _, right, _ := pdf.GetMargins()
	usable := pageW - left - right
	// The second column (fund, description) takes what the others leave.
	widths := make([]float64, len(d.Columns))
	other := 32.0
	for i := range widths {
		widths[i] = other
	}
	if len(widths) > 1 {
		widths[1] = usable - other*float64(len(widths)-1)
	}
	align := func(i int) string {
		if strings.HasPrefix(d.Columns[i], "$") {
			return "R"
		}
		return "L"
	}
	pdf.SetFont("dejavu", "B", 10)
	if c := d.Brand.Secondary; c != nil {
		pdf.SetFillColor(c[0], c[1], c[2])
	} else {
		pdf.SetFillColor(230, 230, 230)
	}
	for i, c := range d.Columns {
		pdf.CellFormat(widths[i], 7, strings.TrimPrefix(c, "$"), "1", 0, align(i), true, 0, "")
	}
	pdf.Ln(-1)
	pdf.SetFont("dejavu", "", 10)
	for _, r := range d.Rows {
		for i := range d.Columns {
			pdf.CellFormat(widths[i], 6.5, fit(pdf, oneLine(r[i]), widths[i]-2), "1", 0, align(i), false, 0, "")
		}
		pdf.Ln(-1)
	}
	pdf.Ln(3)
	for _, t := range d.Totals {
		pdf.SetFont("dejavu", "B", 10)
		pdf.CellFormat(usable-other-10, 6.5, t[0], "", 0, "R", false, 0, "")
		pdf.CellFormat(other+10, 6.5, t[1], "", 1, "R", false, 0, "")
	}
	pdf.Ln(5)
}

// docClosing prints the disclosure sentence, the signatory and the footer.
func docClosing(pdf pdfDoc, d Document) {
	pdf.SetFont("dejavu", "", 10)
	if d.Statement != "" {
		pdf.MultiCell(0, 5.5, d.Statement, "", "L", false)
		pdf.Ln(8)
	}
	for i, l := range d.Signatory {
		if i == 0 {
			pdf.SetFont("dejavu", "B", 10)
		} else {
			pdf.SetFont("dejavu", "", 10)
		}
		pdf.CellFormat(0, 5.5, oneLine(l), "", 1, "L", false, 0, "")
	}
	if d.Footer != "" {
		pdf.Ln(8)
		pdf.SetFont("dejavu", "", 8)
		pdf.MultiCell(0, 4, strings.ReplaceAll(d.Footer, "\r", ""), "", "L", false)
	}
}

// pageTextWidth is the width the organization's name may take: the line
// beside the logo, or all of it (0) without one.
func pageTextWidth(pdf pdfDoc, b Brand) float64 {
	if len(b.Logo) == 0 {
		return 0
	}
	pageW, _ := pdf.GetPageSize()
	left, _, right, _ := pdf.GetMargins()
	return pageW - left - right - logoMaxW - 5
}

// oneLine prints newlines as spaces in a one-line cell.
func oneLine(s string) string {
	return strings.NewReplacer("\r", "", "\n", " ").Replace(s)
}

// fit cuts s to width, so a long fund name stays in its cell.
func fit(pdf pdfDoc, s string, width float64) string {
	for pdf.GetStringWidth(s) > width && s != "" {
		rs := []rune(s)
		s = string(rs[:len(rs)-1])
	}
	return s
}

// PageSize is Letter in the countries that use it, A4 elsewhere.
func PageSize(country string) string {
	switch country {
	case "US", "CA", "MX", "PH", "CL", "CO", "VE", "GT", "DO", "CR", "PA", "SV", "NI":
		return "Letter"
	}
	return "A4"
}
