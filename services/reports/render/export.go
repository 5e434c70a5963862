package render

import (
	"archive/zip"
	"bufio"
	"bytes"
	_ "embed" // the PDF font
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"codeberg.org/go-pdf/fpdf"
	"github.com/xuri/excelize/v2"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/reports/store"
)

// Meta is what an export prints around the rows.
type Meta struct {
	Tenant    string
	Params    [][2]string
	Generated time.Time
}

// Writer writes an export file row by row.
type Writer interface {
	// Row writes one row.
	Row(store.Row) error
	// Close writes the totals and finishes the file.
	Close(totals []store.Totals) error
	// Abort releases what an unfinished file holds (the Excel writer's
	// spool file) when the export fails before Close.
	Abort()
}

// Format is an export format's media type and file extension.
type Format struct{ ContentType, Ext string }

// Formats maps an export format to its content type and extension.
var Formats = map[string]Format{
	"csv":  {"text/csv; charset=utf-8", "csv"},
	"xlsx": {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"},
	"pdf":  {"application/pdf", "pdf"},
}

// NewWriter returns the writer of format onto w.
func NewWriter(format string, t *Table, m Meta, w io.Writer) (Writer, error) {
	switch format {
	case "csv":
		return newCSV(t, w)
	case "xlsx":
		return newXLSX(t, w)
	case "pdf":
		return newPDF(t, m, w), nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// csvWriter writes RFC 4180 CSV: a header of labels, the rows, then one
// "Total" row per currency. Fields holding a comma, a quote or a line
// break, or starting with a space, are quoted (encoding/csv's rule), and
// text that a spreadsheet would run as a formula is neutralized (see
// isFormula).
type csvWriter struct {
	t  *Table
	bw *bufio.Writer
	r  []string
}

func newCSV(t *Table, w io.Writer) (*csvWriter, error) {
	c := &csvWriter{t: t, bw: bufio.NewWriterSize(w, 64<<10), r: make([]string, len(t.Columns))}
	for i, col := range t.Columns {
		c.r[i] = col.Label
	}
	return c, c.write(nil)
}

// write writes c.r as one line; the cells of text columns of row r (nil for
// the header, whose labels are ours) are neutralized.
func (c *csvWriter) write(r store.Row) error {
	for i, f := range c.r {
		if i > 0 {
			c.bw.WriteByte(',')
		}
		formula := false
		if r != nil && c.t.Columns[i].Type == store.String {
			if _, isText := r[i].(string); isText {
				formula = isFormula(f)
			}
		}
		if !formula && !csvNeedsQuotes(f) {
			c.bw.WriteString(f)
			continue
		}
		c.bw.WriteByte('"')
		if formula {
			c.bw.WriteByte('\'')
		}
		for {
			j := strings.IndexByte(f, '"')
			if j < 0 {
				c.bw.WriteString(f)
				break
			}
			c.bw.WriteString(f[:j+1])
			c.bw.WriteByte('"')
			f = f[j+1:]
		}
		c.bw.WriteByte('"')
	}
	return c.bw.WriteByte('\n')
}

// csvNeedsQuotes is encoding/csv's rule: a separator, a quote or a line
// break inside, or a leading space, which some readers would trim.
func csvNeedsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if strings.ContainsAny(f, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}

// isFormula reports text a spreadsheet would evaluate when the file is
// opened: a cell starting with =, +, -, @, a tab or a carriage return
// (OWASP's list for CSV injection). A donor named "=HYPERLINK(…)" must stay
// a name. In CSV such a cell is written quoted with a leading single quote
// (OWASP's advice), so a spreadsheet reads it as text; the quote shows. In
// Excel files the value is kept as it is, as a string cell in the text
// number format (see xlsxWriter). Only text columns are checked: amounts,
// counts and dates are numbers, and a negative amount stays one.
func isFormula(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

func (c *csvWriter) Row(r store.Row) error {
	for i := range c.t.Columns {
		c.r[i] = c.t.Text(r, i)
	}
	return c.write(r)
}

func (c *csvWriter) Abort() {}

func (c *csvWriter) Close(totals []store.Totals) error {
	for _, tot := range totals {
		for i := range c.t.Columns {
			c.r[i] = c.t.Text(tot.Row, i)
		}
		if c.t.Columns[0].Type == store.String || c.r[0] == "" {
			c.r[0] = "Total"
		}
		if err := c.write(tot.Row); err != nil {
			return err
		}
	}
	return c.bw.Flush()
}

// xlsxWriter writes one sheet through excelize's StreamWriter, which
// spools rows to a temporary file past a 16 MiB buffer, so memory stays
// flat; the file is zipped straight onto w at Close (see newXLSX). Amounts
// are numbers with the currency's decimals as the cell format, dates are
// dates. Text is always a string cell, never a formula; text that starts
// like a formula (isFormula) also gets the text number format ("@"), so
// that editing the cell in Excel does not turn it into one. Nothing
// reaches w before Close, so a refusal on the way (too many rows for a
// sheet) can still be answered as a problem document.
type xlsxWriter struct {
	t      *Table
	f      *excelize.File
	sw     *excelize.StreamWriter
	w      io.Writer
	n      int
	row    []any
	styles map[int]int
	date   int
	text   int
}

// MaxXLSXRows is the rows a sheet holds (Excel's limit, the header and the
// totals included); a variable so tests can lower it.
var MaxXLSXRows = excelize.TotalRows

func newXLSX(t *Table, w io.Writer) (*xlsxWriter, error) {
	f := excelize.NewFile()
	// excelize's File.Write builds the whole .xlsx in a bytes.Buffer
	// before copying it out (WriteToBuffer): tens of megabytes for a
	// million rows, growing with the report. Its zip writer is pluggable,
	// so the archive is written to w as it is compressed instead and the
	// buffer stays empty. (WriteToBuffer's zip64 header fix-up, for parts
	// over 4 GiB, would miss it; a sheet within Excel's row limit and our
	// column counts stays far below that.)
	f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(w) })
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		return nil, err
	}
	x := &xlsxWriter{t: t, f: f, sw: sw, w: w, n: 1, row: make([]any, len(t.Columns)), styles: map[int]int{}}
	if x.date, err = f.NewStyle(&excelize.Style{NumFmt: 14}); err != nil {
		return nil, err
	}
	if x.text, err = f.NewStyle(&excelize.Style{NumFmt: 49}); err != nil { // "@"
		return nil, err
	}
	bold, err := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}})
	if err != nil {
		return nil, err
	}
	head := make([]any, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = excelize.Cell{StyleID: bold, Value: c.Label}
	}
	if err := sw.SetRow("A1", head); err != nil {
		return nil, err
	}
	return x, nil
}

// decimalStyle is the number format with exp decimals ("0.00").
func (x *xlsxWriter) decimalStyle(exp int) int {
	if id, ok := x.styles[exp]; ok {
		return id
	}
	code := "0"
	if exp > 0 {
		code += "."
		for range exp {
			code += "0"
		}
	}
	id, err := x.f.NewStyle(&excelize.Style{CustomNumFmt: &code})
	if err != nil {
		id = 0
	}
	x.styles[exp] = id
	return id
}

func (x *xlsxWriter) cells(r store.Row) []any {
	for i, c := range x.t.Columns {
		switch v := r[i].(type) {
		case nil:
			x.row[i] = nil
		case int64:
			if c.Type == store.Decimal {
				cur := x.t.currencyOf(r)
				exp := exponent(cur)
				// The exact decimal text parsed as a float for the cell:
				// spreadsheet numbers are floats, the format shows the
				// currency's decimals.
				x.row[i] = excelize.Cell{StyleID: x.decimalStyle(exp), Value: float64(v) / pow10(exp)}
			} else {
				x.row[i] = v
			}
		case time.Time:
			x.row[i] = excelize.Cell{StyleID: x.date, Value: v}
		case string:
			if c.Type == store.String && isFormula(v) {
				x.row[i] = excelize.Cell{StyleID: x.text, Value: v}
			} else {
				x.row[i] = v
			}
		default:
			x.row[i] = v
		}
		if c.Type == store.Percent {
			x.row[i] = x.t.Text(r, i)
		}
	}
	return x.row
}

func (x *xlsxWriter) Row(r store.Row) error {
	x.n++
	if x.n > MaxXLSXRows {
		return tooManyRows()
	}
	cell, _ := excelize.CoordinatesToCellName(1, x.n)
	return x.sw.SetRow(cell, x.cells(r))
}

func (x *xlsxWriter) Abort() { _ = x.f.Close() }

func tooManyRows() error {
	return apperr.Unprocessable("Report.TooLargeForExcel", fmt.Sprintf("An Excel sheet holds at most %d rows with its header and totals. Export CSV instead.", MaxXLSXRows))
}

func (x *xlsxWriter) Close(totals []store.Totals) error {
	if x.n+len(totals) > MaxXLSXRows {
		x.Abort()
		return tooManyRows()
	}
	for _, tot := range totals {
		x.n++
		cells := x.cells(tot.Row)
		if cells[0] == nil || x.t.Columns[0].Type == store.String {
			cells[0] = "Total"
		}
		cell, _ := excelize.CoordinatesToCellName(1, x.n)
		if err := x.sw.SetRow(cell, cells); err != nil {
			return err
		}
	}
	if err := x.sw.Flush(); err != nil {
		return err
	}
	defer func() { _ = x.f.Close() }()
	return x.f.Write(x.w)
}

//go:embed DejaVuSans.ttf
var fontRegular []byte

//go:embed DejaVuSans-Bold.ttf
var fontBold []byte

// pdfWriter lays the report out as an A4 landscape table: a title block
// (title, tenant, parameters, generation time), headers repeated on each
// page, page numbers in the footer and the totals last. DejaVu Sans is
// embedded (its licence, LICENSE-DejaVu.txt, allows redistribution) so
// non-Latin names print. fpdf keeps the document in memory until Close,
// which is why PDF exports are capped (MaxPDFRows).
type pdfWriter struct {
	t      *Table
	pdf    pdfDoc
	w      io.Writer
	widths []float64
}

// MaxPDFRows caps a PDF export: a PDF is for reading, and fpdf builds the
// document in memory.
const MaxPDFRows = 20000

func newPDF(t *Table, m Meta, w io.Writer) *pdfWriter {
	pdf := pdfDoc{fpdf.New("L", "mm", "A4", "")}
	pdf.AddUTF8FontFromBytes("dejavu", "", fontRegular)
	pdf.AddUTF8FontFromBytes("dejavu", "B", fontBold)
	pdf.SetAutoPageBreak(true, 15)
	pdf.SetCreator("Almoner", true)
	pdf.SetTitle(t.Title, true)
	p := &pdfWriter{t: t, pdf: pdf, w: w}
	pageW, _ := pdf.GetPageSize()
	left, _, right, _ := pdf.GetMargins()
	usable := pageW - left - right
	// Widths in proportion to the header length, at least 18 mm.
	weights := make([]float64, len(t.Columns))
	var sum float64
	for i, c := range t.Columns {
		weights[i] = max(float64(len([]rune(c.Label))), 8)
		if c.Type == store.String {
			weights[i] *= 1.8
		}
		sum += weights[i]
	}
	p.widths = make([]float64, len(t.Columns))
	for i := range weights {
		p.widths[i] = usable * weights[i] / sum
	}
	pdf.SetFooterFunc(func() {
		pdf.SetY(-12)
		pdf.SetFont("dejavu", "", 8)
		pdf.CellFormat(0, 8, fmt.Sprintf("%s — page %d of {nb}", t.Title, pdf.PageNo()), "", 0, "C", false, 0, "")
	})
	pdf.AliasNbPages("{nb}")
	pdf.SetHeaderFunc(func() {
		if pdf.PageNo() > 1 {
			p.header()
		}
	})
	pdf.AddPage()
	pdf.SetFont("dejavu", "B", 16)
	pdf.CellFormat(0, 10, t.Title, "", 1, "L", false, 0, "")
	pdf.SetFont("dejavu", "", 9)
	pdf.CellFormat(0, 5, "Tenant: "+m.Tenant, "", 1, "L", false, 0, "")
	for _, kv := range m.Params {
		pdf.CellFormat(0, 5, kv[0]+": "+kv[1], "", 1, "L", false, 0, "")
	}
	pdf.CellFormat(0, 5, "Generated: "+m.Generated.UTC().Format("2006-01-02 15:04:05 UTC"), "", 1, "L", false, 0, "")
	pdf.Ln(3)
	p.header()
	return p
}

func (p *pdfWriter) header() {
	p.pdf.SetFont("dejavu", "B", 8)
	p.pdf.SetFillColor(230, 230, 230)
	for i, c := range p.t.Columns {
		p.pdf.CellFormat(p.widths[i], 6, c.Label, "1", 0, "L", true, 0, "")
	}
	p.pdf.Ln(-1)
	p.pdf.SetFont("dejavu", "", 8)
}

func (p *pdfWriter) line(r store.Row, first string) {
	for i, c := range p.t.Columns {
		s := p.t.Text(r, i)
		if i == 0 && first != "" {
			s = first
		}
		// One line per row: newlines in text print as spaces, long text is
		// cut to the column.
		s = string(bytes.ReplaceAll(bytes.ReplaceAll([]byte(s), []byte("\r"), nil), []byte("\n"), []byte(" ")))
		for p.pdf.GetStringWidth(s) > p.widths[i]-2 && len(s) > 0 {
			rs := []rune(s)
			s = string(rs[:len(rs)-1])
		}
		align := "L"
		if c.Type == store.Decimal || c.Type == store.Integer || c.Type == store.Percent {
			align = "R"
		}
		p.pdf.CellFormat(p.widths[i], 5, s, "1", 0, align, false, 0, "")
	}
	p.pdf.Ln(-1)
}

func (p *pdfWriter) Row(r store.Row) error {
	p.line(r, "")
	return p.pdf.Error()
}

func (p *pdfWriter) Abort() {}

func (p *pdfWriter) Close(totals []store.Totals) error {
	p.pdf.SetFont("dejavu", "B", 8)
	for _, tot := range totals {
		p.line(tot.Row, "Total")
	}
	return p.pdf.Output(p.w)
}

func exponent(cur string) int {
	if cur == "" {
		return 2
	}
	return moneyExponent(cur)
}

func pow10(n int) float64 {
	f := 1.0
	for range n {
		f *= 10
	}
	return f
}
