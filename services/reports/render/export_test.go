package render

import (
	"bytes"
	"errors"
	"reflect"
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
