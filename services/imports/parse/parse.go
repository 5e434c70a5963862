// Package parse reads the files of bulk imports, CSV or JSON Lines, one
// row at a time from any io.Reader (the imports runner streams them from
// PostgreSQL), and checks each row's values: the syntax, the required
// values, the enumerations, dates and amounts. Memory does not grow with
// the file: a row is the most it holds, and a row is bounded (MaxRowBytes).
//
// A problem with one row is a RowError naming the row, the column and
// what is wrong, and the next row is read; a problem with the file as a
// whole (a bad header, bytes that are not UTF-8, a row too long to hold)
// is a *FileError, and nothing after it is read.
package parse

import (
	"errors"
	"fmt"
	"io"
	"strings"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
)

// The kinds and formats of an import.
const (
	KindContacts = "contacts"
	KindGifts    = "gifts"
	FormatCSV    = "csv"
	FormatJSONL  = "jsonl"
)

// MaxRowBytes bounds one row (a CSV record, a JSON line): a file with a
// longer one is refused, so that a quote never closed cannot make the
// reader hold the rest of a 1 GiB file as one value.
const MaxRowBytes = 1 << 20

// RowError is why one row is refused: the column ("" for the row as a
// whole) and the message.
type RowError struct {
	Row     int64
	Column  string
	Message string
}

// FileError is a file refused as a whole; Message says why, for the
// import's message.
type FileError struct {
	Message string
}

func (e *FileError) Error() string { return e.Message }

// IsFileError reports whether err refuses the file as a whole.
func IsFileError(err error) bool {
	var fe *FileError
	return errors.As(err, &fe)
}

func fileErrorf(format string, args ...any) *FileError {
	return &FileError{Message: fmt.Sprintf(format, args...)}
}

// Gift is one gift row: the row for the orders service, whose contact is
// named either by ContactId (filled) or by ContactExternalID, for the
// runner to resolve.
type Gift struct {
	*ordersv1.GiftImportRow
	ContactExternalID string
}

// Row is one data row of a file: its number (1-based; for JSON Lines the
// line number) and, when Errors is empty, the row parsed for its kind.
type Row struct {
	Num     int64
	Contact *contactsv1.ContactImportRow
	Gift    *Gift
	Errors  []RowError
}

// record is one row as a source reads it: its values by column index of
// the kind ("" when absent), and the errors found reading it.
type record struct {
	num    int64
	values []string
	errs   []RowError
}

// source reads records of one format; io.EOF after the last.
type source interface {
	next() (record, error)
}

// Reader reads the rows of one file.
type Reader struct {
	spec     *spec
	src      source
	currency string
}

// NewReader returns a reader of a file of kind (contacts or gifts) in
// format (csv or jsonl) read from r. currency is the tenant's default
// currency, the one a gift amount without a currency is in ("" when not
// known: amounts then take two decimals). A CSV header that does not fit
// the kind is a *FileError.
func NewReader(kind, format string, r io.Reader, currency string) (*Reader, error) {
	sp, ok := specs[kind]
	if !ok {
		return nil, fmt.Errorf("parse: unknown kind %q", kind)
	}
	var src source
	var err error
	switch format {
	case FormatCSV:
		src, err = newCSVSource(sp, r)
	case FormatJSONL:
		src = newJSONLSource(sp, r)
	default:
		return nil, fmt.Errorf("parse: unknown format %q", format)
	}
	if err != nil {
		return nil, err
	}
	return &Reader{spec: sp, src: src, currency: currency}, nil
}

// Next returns the next row, io.EOF after the last, or a *FileError (or
// the underlying reader's error) that ends the file.
func (r *Reader) Next() (Row, error) {
	rec, err := r.src.next()
	if err != nil {
		return Row{}, err
	}
	row := Row{Num: rec.num, Errors: rec.errs}
	if len(rec.errs) > 0 && rec.values == nil {
		return row, nil
	}
	v := &values{num: rec.num, vals: rec.values, errs: rec.errs}
	r.spec.check(v, &row, r.currency)
	row.Errors = v.errs
	if len(row.Errors) > 0 {
		row.Contact, row.Gift = nil, nil
	}
	return row, nil
}

// spec is one kind's columns and row check.
type spec struct {
	kind    string
	columns []string
	// index maps a column name in lower case to its index.
	index map[string]int
	// required lists sets of columns of which a header needs one.
	required [][]string
	check    func(v *values, row *Row, currency string)
}

func newSpec(kind string, columns []string, required [][]string, check func(*values, *Row, string)) *spec {
	s := &spec{kind: kind, columns: columns, index: map[string]int{}, required: required, check: check}
	for i, c := range columns {
		s.index[strings.ToLower(c)] = i
	}
	return s
}

// column returns the index of a header name or JSON key: its case and
// surrounding spaces do not matter.
func (s *spec) column(name string) (int, bool) {
	i, ok := s.index[strings.ToLower(strings.TrimSpace(name))]
	return i, ok
}

var specs = map[string]*spec{
	KindContacts: contactsSpec,
	KindGifts:    giftsSpec,
}

// Columns returns the columns of kind, in the documented order.
func Columns(kind string) []string {
	if sp, ok := specs[kind]; ok {
		return append([]string(nil), sp.columns...)
	}
	return nil
}
