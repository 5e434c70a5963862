package parse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// values is one record under check: its cells by column index and the
// errors found so far.
type values struct {
	num  int64
	vals []string
	errs []RowError
}

// get returns column i's value, trimmed.
func (v *values) get(i int) string { return strings.TrimSpace(v.vals[i]) }

// fail records an error about column col.
func (v *values) fail(col, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	v.errs = append(v.errs, RowError{Row: v.num, Column: col, Message: msg})
}

// failed reports whether column col already has an error.
func (v *values) failed(col string) bool {
	for _, e := range v.errs {
		if e.Column == col {
			return true
		}
	}
	return false
}

// text returns column i (named col) trimmed, refusing one longer than
// max characters or holding control characters, as the contacts service
// refuses them in a body (services/contacts/validation.go).
func (v *values) text(i int, col string, max int) string {
	s := v.get(i)
	if n := utf8.RuneCountInString(s); n > max {
		v.fail(col, "'%s' must be %d characters or fewer.", col, max)
		return s
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			v.fail(col, "'%s' must not contain control characters.", col)
			return s
		}
	}
	return s
}

// oneOf returns the option s names, ignoring case, in its own spelling.
func oneOf(s string, options []string) (string, bool) {
	for _, o := range options {
		if strings.EqualFold(s, o) {
			return o, true
		}
	}
	return "", false
}

// enum returns column i as one of options ("" when empty), refusing any
// other value.
func (v *values) enum(i int, col string, options []string) string {
	s := v.get(i)
	if s == "" {
		return ""
	}
	o, ok := oneOf(s, options)
	if !ok {
		v.fail(col, "'%s' must be %s.", col, orList(options))
	}
	return o
}

func orList(options []string) string {
	if len(options) == 1 {
		return options[0]
	}
	return strings.Join(options[:len(options)-1], ", ") + " or " + options[len(options)-1]
}
