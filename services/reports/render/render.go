// Package render writes report rows as the run's JSON document and as
// export files (CSV, Excel, PDF). Every writer takes rows one at a time so
// an export never holds the whole report.
package render

import (
	"strconv"
	"strings"
	"time"

	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/services/reports/store"
)

// Table is what every writer needs to know about a report.
type Table struct {
	Title   string
	Columns []store.Column
	// currency is the index of the Currency column, -1 when none.
	currency int
}

// NewTable prepares a table of cols.
func NewTable(title string, cols []store.Column) *Table {
	t := &Table{Title: title, Columns: cols, currency: -1}
	for i, c := range cols {
		if c.Key == "Currency" {
			t.currency = i
		}
	}
	return t
}

// currencyOf returns the row's currency for its Decimal cells.
func (t *Table) currencyOf(r store.Row) string {
	if t.currency < 0 {
		return ""
	}
	s, _ := r[t.currency].(string)
	return s
}

// Text is cell i of r as text: dates YYYY-MM-DD, amounts with their
// currency's decimals, booleans true/false, null as "".
func (t *Table) Text(r store.Row, i int) string {
	switch v := r[i].(type) {
	case nil:
		return ""
	case int64:
		if t.Columns[i].Type == store.Decimal {
			return money.FormatMinor(v, t.currencyOf(r))
		}
		return strconv.FormatInt(v, 10)
	case string:
		return v
	case time.Time:
		return v.Format(time.DateOnly)
	case bool:
		return strconv.FormatBool(v)
	default:
		return ""
	}
}

// AppendJSON appends r as a JSON object keyed by the column keys, in
// column order: numbers bare (amounts with their decimals), dates and
// strings quoted.
func (t *Table) AppendJSON(b []byte, r store.Row) []byte {
	b = append(b, '{')
	for i, c := range t.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c.Key)
		b = append(b, ':')
		switch v := r[i].(type) {
		case nil:
			b = append(b, "null"...)
		case string:
			if c.Type == store.Percent {
				b = append(b, v...)
			} else {
				b = appendString(b, v)
			}
		case bool:
			b = strconv.AppendBool(b, v)
		case int64, time.Time:
			s := t.Text(r, i)
			if _, isTime := v.(time.Time); isTime {
				b = appendString(b, s)
			} else {
				b = append(b, s...)
			}
		default:
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaping what JSON requires.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Run is one page of a run, ready to render.
type Run struct {
	Table         *Table
	Rows          []store.Row
	Totals        []store.Totals
	TotalCount    int64
	Page, Size    int32
	NextPageToken string
}

// JSON renders the run document: columns, rows, totals (one row per
// currency), totalCount, page, pageSize and nextPageToken.
func (r Run) JSON() []byte {
	b := make([]byte, 0, 256+len(r.Rows)*128)
	b = append(b, `{"columns":[`...)
	for i, c := range r.Table.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendString(b, c.Key)
		b = append(b, `,"label":`...)
		b = appendString(b, c.Label)
		b = append(b, `,"type":`...)
		b = appendString(b, c.Type)
		b = append(b, '}')
	}
	b = append(b, `],"rows":[`...)
	for i, row := range r.Rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.Table.AppendJSON(b, row)
	}
	b = append(b, `],"totals":[`...)
	for i, t := range r.Totals {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.Table.AppendJSON(b, t.Row)
	}
	b = append(b, `],"totalCount":`...)
	b = strconv.AppendInt(b, r.TotalCount, 10)
	b = append(b, `,"page":`...)
	b = strconv.AppendInt(b, int64(r.Page), 10)
	b = append(b, `,"pageSize":`...)
	b = strconv.AppendInt(b, int64(r.Size), 10)
	b = append(b, `,"nextPageToken":`...)
	b = appendString(b, r.NextPageToken)
	return append(b, '}')
}

// FileName is a download's name: the title reduced to letters, digits and
// dashes, then the extension.
func FileName(title, ext string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
			dash = false
		} else if !dash && sb.Len() > 0 {
			sb.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimSuffix(sb.String(), "-")
	if name == "" {
		name = "report"
	}
	return name + "." + ext
}

func moneyExponent(cur string) int { return money.Exponent(cur) }
