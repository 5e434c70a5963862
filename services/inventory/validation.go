package inventory

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/services/inventory/store"
)

// Field limits. Amounts and stock are capped well inside their column
// types so that orders can multiply a price by a quantity and sum lines
// without overflowing int64 minor units.
const (
	maxSKU         = 64
	maxName        = 200
	maxDescription = 2000
	maxCategory    = 100
	maxLocation    = 100
	maxSearch      = 200
	// maxAmountMajor is the largest price, in major units of any currency.
	maxAmountMajor = 1_000_000_000
	// maxStock is the largest stockOnHand.
	maxStock = 1_000_000_000
)

// itemInput is the editable fields of a create or full-replace request.
type itemInput struct {
	SKU, Name, Description, Currency, Category, Location string
	Price, FairMarketValue                               *typev1.Decimal
	TrackStock, Active                                   *bool
	StockOnHand                                          int32
}

// validateItem checks in and returns the item it describes (without tenant
// or id). An omitted currency is the tenant's default, read with
// defaultCurrency only then.
func validateItem(ctx context.Context, in itemInput, defaultCurrency func(context.Context) (string, error)) (store.Item, error) {
	var v apperr.Violations
	it := itemText(&v, in)
	switch {
	case in.StockOnHand < 0:
		v.Add("StockOnHand", "'StockOnHand' must be greater than or equal to 0.")
	case in.StockOnHand > maxStock:
		v.Add("StockOnHand", "'StockOnHand' must be %d or less.", maxStock)
	}
	currency, err := itemCurrency(ctx, &v, in.Currency, defaultCurrency)
	if err != nil {
		return store.Item{}, err
	}
	it.Currency = currency
	// Amounts are only checked against a known currency: its decimals
	// decide what is valid, and the currency error already says what to fix.
	if in.Price == nil {
		v.Add("Price", "'Price' must not be empty.")
	}
	if v.Has("Currency") {
		return store.Item{}, v.Err()
	}
	itemAmounts(&v, &it, in)
	if err := v.Err(); err != nil {
		return store.Item{}, err
	}
	return it, nil
}

// itemText reads an item's text fields and switches.
func itemText(v *apperr.Violations, in itemInput) store.Item {
	it := store.Item{
		SKU:         strings.TrimSpace(in.SKU),
		Name:        strings.TrimSpace(in.Name),
		Description: strings.TrimSpace(in.Description),
		Category:    strings.TrimSpace(in.Category),
		Location:    strings.TrimSpace(in.Location),
		StockOnHand: in.StockOnHand,
		TrackStock:  in.TrackStock != nil && *in.TrackStock,
		Active:      in.Active == nil || *in.Active,
	}
	requiredText(v, "Sku", it.SKU, maxSKU)
	if !v.Has("Sku") && strings.ContainsFunc(it.SKU, unicode.IsControl) {
		v.Add("Sku", "'Sku' must not contain control characters.")
	}
	requiredText(v, "Name", it.Name, maxName)
	optionalText(v, "Description", it.Description, maxDescription)
	optionalText(v, "Category", it.Category, maxCategory)
	optionalText(v, "Location", it.Location, maxLocation)
	return it
}

// itemCurrency is the item's currency, else the tenant's default; one
// that is no ISO 4217 code is a violation under Currency.
func itemCurrency(ctx context.Context, v *apperr.Violations, given string, defaultCurrency func(context.Context) (string, error)) (string, error) {
	currency := strings.ToUpper(strings.TrimSpace(given))
	if currency == "" {
		code, err := defaultCurrency(ctx)
		if err != nil {
			return "", err
		}
		currency = code
	}
	if !money.Known(currency) {
		v.Add("Currency", "'%s' is not an ISO 4217 currency code.", truncate(currency, 8))
	}
	return currency, nil
}

// itemAmounts reads the price and the fair market value in the item's
// currency.
func itemAmounts(v *apperr.Violations, it *store.Item, in itemInput) {
	price, priceOK := amount(v, "Price", in.Price, it.Currency)
	it.PriceMinor = price
	if in.FairMarketValue == nil {
		// Nothing deductible unless the tenant says what the donor
		// received is worth less than the price: the safe default for a
		// donor's tax receipt.
		it.FairMarketValueMinor = price
		return
	}
	if fmv, ok := amount(v, "FairMarketValue", in.FairMarketValue, it.Currency); ok {
		it.FairMarketValueMinor = fmv
		if priceOK && fmv > price {
			v.Add("FairMarketValue", "'FairMarketValue' must not be greater than 'Price'.")
		}
	}
}

// amount parses a Decimal in currency's minor units and checks that it is
// zero or more and within maxAmountMajor; nil (already reported by the
// caller if required) is not ok.
func amount(v *apperr.Violations, field string, d *typev1.Decimal, currency string) (int64, bool) {
	if d == nil {
		return 0, false
	}
	minor, err := money.ParseMinor(d.GetValue(), currency)
	switch {
	case errors.Is(err, money.ErrPrecision):
		v.Add(field, "'%s' must have at most %d decimals for %s.", field, money.Exponent(currency), currency)
	case errors.Is(err, money.ErrRange):
		v.Add(field, "'%s' must be %d or less.", field, maxAmountMajor)
	case err != nil:
		v.Add(field, "'%s' must be a decimal number such as 100.00.", field)
	case minor < 0:
		v.Add(field, "'%s' must be greater than or equal to 0.", field)
	case minor > maxMinor(currency):
		v.Add(field, "'%s' must be %d or less.", field, maxAmountMajor)
	default:
		return minor, true
	}
	return 0, false
}

func maxMinor(currency string) int64 {
	m := int64(maxAmountMajor)
	for range money.Exponent(currency) {
		m *= 10
	}
	return m
}

func requiredText(v *apperr.Violations, field, s string, limit int) {
	if s == "" {
		v.Add(field, "'%s' must not be empty.", field)
		return
	}
	optionalText(v, field, s, limit)
}

func optionalText(v *apperr.Violations, field, s string, limit int) {
	if utf8.RuneCountInString(s) > limit {
		v.Add(field, "'%s' must be %d characters or fewer.", field, limit)
	}
}

// truncate shortens s to n runes for an error message that echoes input.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
