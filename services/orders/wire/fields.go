package wire

import (
	"errors"
	"strings"
	"unicode/utf8"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/services/orders/store"
)

// Limits of the API's text and amounts. Amounts are capped so sums of
// lines stay far inside int64 minor units.
const (
	MaxText        = 200
	MaxNotes       = 2000
	MaxAmountMajor = 1_000_000_000
)

// MaxMinor is the largest amount in currency's minor units.
func MaxMinor(currency string) int64 {
	m := int64(MaxAmountMajor)
	for range money.Exponent(currency) {
		m *= 10
	}
	return m
}

// Amount parses a required positive amount in currency.
func Amount(v *apperr.Violations, field string, d *typev1.Decimal, currency string) int64 {
	if d == nil || d.GetValue() == "" {
		v.Add(field, "'%s' must not be empty.", LastSegment(field))
		return 0
	}
	minor, err := money.ParseMinor(d.GetValue(), currency)
	switch {
	case errors.Is(err, money.ErrPrecision):
		v.Add(field, "'%s' must have at most %d decimals for %s.", LastSegment(field), money.Exponent(currency), currency)
	case err != nil && !errors.Is(err, money.ErrRange):
		v.Add(field, "'%s' must be a decimal number such as 100.00.", LastSegment(field))
	case err == nil && minor <= 0:
		v.Add(field, "'%s' must be greater than 0.", LastSegment(field))
	case err != nil || minor > MaxMinor(currency):
		v.Add(field, "'%s' must be %d or less.", LastSegment(field), MaxAmountMajor)
	default:
		return minor
	}
	return 0
}

// LastSegment is the last name of a property path, for messages.
func LastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// Text trims a text field and checks it is given (when required) and
// within limit characters.
func Text(v *apperr.Violations, field, s string, limit int, required bool) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "" && required:
		v.Add(field, "'%s' must not be empty.", LastSegment(field))
	case utf8.RuneCountInString(s) > limit:
		v.Add(field, "'%s' must be %d characters or fewer.", LastSegment(field), limit)
	}
	return s
}

// Address reads an address of a request body under field.
func Address(v *apperr.Violations, field string, a *ordersv1.Address) *store.Address {
	if a == nil {
		return nil
	}
	return &store.Address{
		Line1:         Text(v, field+".Line1", a.GetLine1(), MaxText, true),
		Line2:         Text(v, field+".Line2", a.GetLine2(), MaxText, false),
		City:          Text(v, field+".City", a.GetCity(), MaxText, false),
		StateProvince: Text(v, field+".StateProvince", a.GetStateProvince(), MaxText, false),
		PostalCode:    Text(v, field+".PostalCode", a.GetPostalCode(), 20, false),
		Country:       Text(v, field+".Country", a.GetCountry(), 100, false),
	}
}

// FirstNonEmpty is a unless it is empty, else b.
func FirstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Truncate shortens s to n runes for an error message that echoes input.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
