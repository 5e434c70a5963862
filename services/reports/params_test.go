package reports

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/reports/render"
)

func TestResolveViolations(t *testing.T) {
	t.Parallel()
	now := day("2026-06-30")
	tests := []struct {
		typ   string
		raw   map[string]string
		field string
	}{
		{"top-donors", map[string]string{"From": "2026-13-01"}, "Parameters.From"},
		{"top-donors", map[string]string{"From": "2026-06-01", "To": "2026-05-01"}, "Parameters.To"},
		{"top-donors", map[string]string{"Limit": "0"}, "Parameters.Limit"},
		{"top-donors", map[string]string{"Limit": "ten"}, "Parameters.Limit"},
		{"top-donors", map[string]string{"Colour": "red"}, "Parameters.Colour"},
		{"donations-by-period", map[string]string{"Interval": "fortnight"}, "Parameters.Interval"},
		{"donations-by-period", map[string]string{"FundId": "nope"}, "Parameters.FundId"},
		{"giving-statement", map[string]string{}, "Parameters.ContactId"},
		{"donor-retention", map[string]string{"Year": "2026", "PreviousYear": "2026"}, "Parameters.PreviousYear"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.field, func(t *testing.T) {
			t.Parallel()
			_, _, err := typeByKey(tt.typ).resolve(tt.raw, now)
			e, ok := apperr.As(err)
			if !ok || !strings.Contains(e.Error(), tt.field) {
				t.Errorf("got %v, want a violation under %s", err, tt.field)
			}
		})
	}
	vals, clean, err := typeByKey("donations-by-period").resolve(map[string]string{"interval": "WEEK"}, now)
	if err != nil || vals.Str("Interval") != "week" || !vals.Date("From").Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || clean["Interval"] != "WEEK" {
		t.Errorf("defaults and case: %v %v %v", vals, clean, err)
	}
}

// FuzzResolve feeds untrusted parameter values to every type: resolve must
// either accept them or answer a 400, never panic.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"2026-01-01", "10", "-1", "month", "9999-99-99", "", "00000000-0000-0000-0000-000000000000", "1e9", "２０２６-01-01"} {
		f.Add(s)
	}
	now := day("2026-06-30")
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range Catalog {
			raw := map[string]string{}
			for _, p := range typ.Params {
				raw[p.Key] = s
			}
			_, _, err := typ.resolve(raw, now)
			if err != nil && !apperr.IsKind(err, apperr.KindInvalid) {
				t.Fatalf("%s(%q): %v", typ.Key, s, err)
			}
		}
	})
}

// TestExportsRoundTrip writes the fixture's top donors (a name with a
// newline, one in Chinese) as CSV and Excel and reads them back.
func TestExportsRoundTrip(t *testing.T) {
	f := newFixture(t)
	typ := typeByKey("top-donors")
	vals, _, err := typ.resolve(map[string]string{"From": "2026-01-01", "To": "2026-12-31"}, day("2026-06-30"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _, totals, err := f.svc.store.Page(t.Context(), f.tenant, typ.build(vals), typ.Columns, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	table := render.NewTable("Top", typ.Columns)
	want := [][]string{}
	for _, r := range rows {
		line := make([]string, len(typ.Columns))
		for i := range line {
			line[i] = table.Text(r, i)
		}
		want = append(want, line)
	}
	if want[2][2] != "Ray Recovered\nLine" || want[0][2] != "Zoë 王" {
		t.Fatalf("fixture rows %q", want)
	}
	for _, format := range []string{"csv", "xlsx", "pdf"} {
		var buf bytes.Buffer
		w, err := render.NewWriter(format, table, render.Meta{Tenant: "t", Generated: day("2026-06-30")}, &buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := w.Row(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(totals); err != nil {
			t.Fatal(err)
		}
		var got [][]string
		switch format {
		case "csv":
			got, err = csv.NewReader(&buf).ReadAll()
		case "xlsx":
			var x *excelize.File
			if x, err = excelize.OpenReader(&buf); err == nil {
				got, err = x.GetRows("Sheet1")
			}
		case "pdf":
			if !bytes.HasPrefix(buf.Bytes(), []byte("%PDF-")) {
				t.Errorf("pdf starts %q", buf.Bytes()[:8])
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if len(got) != 1+len(want)+len(totals) {
			t.Fatalf("%s: %d lines, want %d: %q", format, len(got), 1+len(want)+len(totals), got)
		}
		for i, w := range want {
			if strings.Join(got[1+i], "|") != strings.Join(w, "|") {
				t.Errorf("%s row %d = %q, want %q", format, i, got[1+i], w)
			}
		}
	}
}
