package render

import (
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
}

// WriteDocument lays d out as a PDF with DejaVu Sans embedded (so every
// accented Latin name prints and pdftotext reads the text back) and
// writes it to w. A document is one page unless its table is long. Every
// text goes through Printable (pdfDoc), so any valid or invalid UTF-8
// prints; a panic inside fpdf all the same is this document's error,
// returned before anything was written to w (fpdf writes only at Output,
// once the document is complete).
func WriteDocument(d Document, w io.Writer) error {
	return WriteDocuments(d.Title, []Document{d}, w)
}

// WriteDocuments lays each of ds out as WriteDocument does, each from a
// new page, in one PDF titled title (a batch of packing slips), in the
// first document's page size.
func WriteDocuments(title string, ds []Document, w io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("render: document: fpdf: %v", r)
		}
	}()
	size := "A4"
	if len(ds) > 0 && ds[0].PageSize != "" {
		size = ds[0].PageSize
	}
	pdf := pdfDoc{fpdf.New("P", "mm", size, "")}
	pdf.AddUTF8FontFromBytes("dejavu", "", fontRegular)
	pdf.AddUTF8FontFromBytes("dejavu", "B", fontBold)
	pdf.SetAutoPageBreak(true, 15)
	pdf.SetCreator("Almoner", true)
	pdf.SetTitle(title, true)
	for _, d := range ds {
		pdf.AddPage()
		docHeader(pdf, d)
		docTable(pdf, d)
		docClosing(pdf, d)
	}
	if err := pdf.Error(); err != nil {
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
			pdf.MultiCell(0, 7, l, "", "L", false)
			pdf.SetFont("dejavu", "", 9)
			continue
		}
		pdf.MultiCell(0, 4.5, oneLine(l), "", "L", false)
	}
	pdf.Ln(6)
	pdf.SetFont("dejavu", "B", 16)
	pdf.CellFormat(0, 9, d.Title, "", 1, "L", false, 0, "")
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
	pdf.SetFillColor(230, 230, 230)
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
