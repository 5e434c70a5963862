package parse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// jsonlSource reads one JSON object per line, keyed by the column names.
type jsonlSource struct {
	sp   *spec
	r    *bufio.Reader
	line []byte
	num  int64
}

func newJSONLSource(sp *spec, in io.Reader) *jsonlSource {
	return &jsonlSource{sp: sp, r: bufio.NewReaderSize(in, 64<<10)}
}

// readLine returns the next line without its end; too is true when the
// line was longer than MaxRowBytes (it is then skipped to its end).
func (s *jsonlSource) readLine() (line []byte, tooLong bool, err error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if !tooLong {
			if len(s.line)+len(frag) > MaxRowBytes+1 {
				tooLong, s.line = true, s.line[:0]
			} else {
				s.line = append(s.line, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(s.line) == 0 && !tooLong && len(frag) == 0 {
				return nil, false, io.EOF
			}
			return bytes.TrimRight(s.line, "\r\n"), tooLong, nil
		case err != nil:
			return nil, false, err
		}
		return bytes.TrimRight(s.line, "\r\n"), tooLong, nil
	}
}

func (s *jsonlSource) next() (record, error) {
	for {
		line, tooLong, err := s.readLine()
		if err != nil {
			return record{}, err
		}
		s.num++
		if s.num == 1 {
			line = bytes.TrimPrefix(line, []byte(bom))
		}
		if tooLong {
			return record{num: s.num, errs: []RowError{{Row: s.num, Message: fmt.Sprintf("The line is longer than %d bytes.", MaxRowBytes)}}}, nil
		}
		if !utf8.Valid(line) {
			return record{}, fileErrorf("The file is not UTF-8 text (line %d).", s.num)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			// Blank lines (a file's last newline, a spacer) hold no row.
			continue
		}
		return s.decode(line), nil
	}
}

// decode reads one line's object into a record.
func (s *jsonlSource) decode(line []byte) record {
	rec := record{num: s.num}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		rec.errs = append(rec.errs, RowError{Row: s.num, Message: "The line is not valid JSON: " + jsonReason(err) + "."})
		return rec
	}
	obj, ok := v.(map[string]any)
	if !ok {
		rec.errs = append(rec.errs, RowError{Row: s.num, Message: "The line must hold one JSON object."})
		return rec
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		rec.errs = append(rec.errs, RowError{Row: s.num, Message: "The line must hold one JSON object and nothing after it."})
		return rec
	}
	rec.values = make([]string, len(s.sp.columns))
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	// Errors in key order: the same file always gives the same errors.
	sort.Strings(keys)
	for _, k := range keys {
		c, ok := s.sp.column(k)
		if !ok {
			rec.errs = append(rec.errs, RowError{Row: s.num, Column: k,
				Message: fmt.Sprintf("'%s' is not a column of a %s import.", k, s.sp.kind)})
			continue
		}
		val, ok := scalar(obj[k], s.sp.columns[c] == "tags")
		if !ok {
			rec.errs = append(rec.errs, RowError{Row: s.num, Column: s.sp.columns[c],
				Message: fmt.Sprintf("'%s' must be a string or a number.", s.sp.columns[c])})
			continue
		}
		rec.values[c] = val
	}
	return rec
}

// scalar returns a value's text as a CSV cell would hold it: a string as
// it is, a number as written, null as empty. A list of strings is allowed
// where list says so (tags), joined as the CSV column joins them.
func scalar(v any, list bool) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case []any:
		if !list {
			return "", false
		}
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok || strings.Contains(s, tagSeparator) {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, tagSeparator), true
	default:
		return "", false
	}
}

// jsonReason is a decoding error's text without Go's package prefix.
func jsonReason(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}
