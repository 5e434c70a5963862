package parse

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

const bom = "\ufeff"

// csvSource reads CSV records by the header's column names.
type csvSource struct {
	r     *csv.Reader
	guard *rowGuard
	// cols maps each field position of the header to a column index.
	cols  []int
	width int
	num   int64
}

func newCSVSource(sp *spec, in io.Reader) (*csvSource, error) {
	g := &rowGuard{r: in}
	r := csv.NewReader(g)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	s := &csvSource{r: r, guard: g, width: len(sp.columns)}
	header, err := r.Read()
	switch {
	case errors.Is(err, io.EOF):
		return nil, fileErrorf("The file has no header row.")
	case errors.Is(err, errRowTooLong):
		return nil, fileErrorf("The header row is longer than %d bytes.", MaxRowBytes)
	case isCSVSyntax(err):
		return nil, fileErrorf("The header row is not valid CSV: %s.", csvReason(err))
	case err != nil:
		return nil, err
	}
	g.mark(r.InputOffset())
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], bom)
	}
	if s.cols, err = headerColumns(sp, header); err != nil {
		return nil, err
	}
	return s, nil
}

// headerColumns maps a header to the kind's columns: a name that is no
// column, a column named twice, or a header without a required column
// refuses the file.
func headerColumns(sp *spec, header []string) ([]int, error) {
	cols := make([]int, len(header))
	var unknown, repeated []string
	seen := map[int]bool{}
	for i, h := range header {
		if !utf8.ValidString(h) {
			return nil, fileErrorf("The file is not UTF-8 text (the header row).")
		}
		c, ok := sp.column(h)
		switch {
		case !ok:
			unknown = append(unknown, fmt.Sprintf("%q", strings.TrimSpace(h)))
		case seen[c]:
			repeated = append(repeated, sp.columns[c])
		}
		if ok {
			seen[c] = true
		}
		cols[i] = c
	}
	if len(unknown) > 0 {
		return nil, fileErrorf("Unknown columns in the header: %s. The columns of a %s import are %s.",
			strings.Join(unknown, ", "), sp.kind, strings.Join(sp.columns, ", "))
	}
	if len(repeated) > 0 {
		return nil, fileErrorf("Columns named more than once in the header: %s.", strings.Join(repeated, ", "))
	}
	for _, set := range sp.required {
		if !hasAny(sp, seen, set) {
			return nil, fileErrorf("The header needs the column %s.", strings.Join(set, " or "))
		}
	}
	return cols, nil
}

func hasAny(sp *spec, seen map[int]bool, set []string) bool {
	for _, name := range set {
		if c, _ := sp.column(name); seen[c] {
			return true
		}
	}
	return false
}

func (s *csvSource) next() (record, error) {
	fields, err := s.r.Read()
	s.guard.mark(s.r.InputOffset())
	if errors.Is(err, io.EOF) {
		return record{}, io.EOF
	}
	s.num++
	rec := record{num: s.num}
	switch {
	case errors.Is(err, errRowTooLong):
		return record{}, fileErrorf("Row %d is longer than %d bytes.", s.num, MaxRowBytes)
	case isCSVSyntax(err):
		rec.errs = append(rec.errs, RowError{Row: s.num, Message: fmt.Sprintf("The row is not valid CSV: %s.", csvReason(err))})
		return rec, nil
	case err != nil:
		return record{}, err
	case len(fields) != len(s.cols):
		rec.errs = append(rec.errs, RowError{Row: s.num, Message: fmt.Sprintf("The row has %d values; the header has %d.", len(fields), len(s.cols))})
		return rec, nil
	}
	rec.values = make([]string, s.width)
	for i, f := range fields {
		if !utf8.ValidString(f) {
			return record{}, fileErrorf("The file is not UTF-8 text (row %d).", s.num)
		}
		rec.values[s.cols[i]] = f
	}
	return rec, nil
}

func isCSVSyntax(err error) bool {
	var pe *csv.ParseError
	return errors.As(err, &pe)
}

func csvReason(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// errRowTooLong is rowGuard's refusal of a row over MaxRowBytes.
var errRowTooLong = errors.New("row too long")

// rowGuard passes reads through until more than MaxRowBytes (plus what
// the CSV reader buffers ahead) have gone by since the last row ended:
// encoding/csv has no limit of its own on a record.
type rowGuard struct {
	r        io.Reader
	read     int64
	rowStart int64
}

// readAhead is more than encoding/csv's bufio reader holds beyond the
// current record.
const readAhead = 64 << 10

func (g *rowGuard) mark(offset int64) { g.rowStart = offset }

func (g *rowGuard) Read(p []byte) (int, error) {
	if g.read-g.rowStart > MaxRowBytes+readAhead {
		return 0, errRowTooLong
	}
	n, err := g.r.Read(p)
	g.read += int64(n)
	return n, err
}
