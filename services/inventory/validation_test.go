package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/inventory/store"
)

func dec(s string) *typev1.Decimal { return &typev1.Decimal{Value: s} }

func ptr[T any](v T) *T { return &v }

func usd(context.Context) (string, error) { return "USD", nil }

// violations returns the failures of err by field, failing the test when
// err is not a validation error.
func violations(t *testing.T, err error) map[string]string {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid {
		t.Fatalf("err = %v, want a validation error", err)
	}
	m := map[string]string{}
	for _, v := range e.Violations {
		m[v.Field] = v.Message
	}
	return m
}

func TestValidateItemRules(t *testing.T) {
	t.Parallel()
	valid := func() itemInput {
		return itemInput{SKU: "TOTE-1", Name: "Tote bag", Price: dec("25.00"), Currency: "USD"}
	}
	cases := []struct {
		name   string
		change func(*itemInput)
		want   map[string]string // field → part of the message
	}{
		{"missing sku", func(in *itemInput) { in.SKU = "  " }, map[string]string{"Sku": "must not be empty"}},
		{"long sku", func(in *itemInput) { in.SKU = strings.Repeat("S", 65) }, map[string]string{"Sku": "64 characters"}},
		{"control character in sku", func(in *itemInput) { in.SKU = "A\x00B" }, map[string]string{"Sku": "control characters"}},
		{"missing name", func(in *itemInput) { in.Name = "" }, map[string]string{"Name": "must not be empty"}},
		{"long name", func(in *itemInput) { in.Name = strings.Repeat("é", 201) }, map[string]string{"Name": "200 characters"}},
		{"long description", func(in *itemInput) { in.Description = strings.Repeat("d", 2001) }, map[string]string{"Description": "2000 characters"}},
		{"long category", func(in *itemInput) { in.Category = strings.Repeat("c", 101) }, map[string]string{"Category": "100 characters"}},
		{"unknown currency", func(in *itemInput) { in.Currency = "XYZ" }, map[string]string{"Currency": "'XYZ' is not an ISO 4217"}},
		{"unknown currency with a missing price", func(in *itemInput) { in.Currency = "usdollar"; in.Price = nil },
			map[string]string{"Currency": "'USDOLLAR' is not", "Price": "must not be empty"}},
		{"missing price", func(in *itemInput) { in.Price = nil }, map[string]string{"Price": "must not be empty"}},
		{"negative price", func(in *itemInput) { in.Price = dec("-1.00") }, map[string]string{"Price": "greater than or equal to 0"}},
		{"price with three decimals", func(in *itemInput) { in.Price = dec("1.234") }, map[string]string{"Price": "at most 2 decimals for USD"}},
		{"yen with decimals", func(in *itemInput) { in.Currency = "JPY"; in.Price = dec("100.5") }, map[string]string{"Price": "at most 0 decimals for JPY"}},
		{"price too large", func(in *itemInput) { in.Price = dec("1000000000.01") }, map[string]string{"Price": "1000000000 or less"}},
		{"price beyond int64", func(in *itemInput) { in.Price = dec("99999999999999999999") }, map[string]string{"Price": "1000000000 or less"}},
		{"price not a number", func(in *itemInput) { in.Price = dec("ten") }, map[string]string{"Price": "decimal number"}},
		{"negative fair market value", func(in *itemInput) { in.FairMarketValue = dec("-0.01") }, map[string]string{"FairMarketValue": "greater than or equal to 0"}},
		{"fair market value above price", func(in *itemInput) { in.FairMarketValue = dec("25.01") }, map[string]string{"FairMarketValue": "must not be greater than 'Price'"}},
		{"fair market value decimals", func(in *itemInput) { in.FairMarketValue = dec("0.001") }, map[string]string{"FairMarketValue": "at most 2 decimals"}},
		{"negative stock", func(in *itemInput) { in.StockOnHand = -1 }, map[string]string{"StockOnHand": "greater than or equal to 0"}},
		{"too much stock", func(in *itemInput) { in.StockOnHand = maxStock + 1 }, map[string]string{"StockOnHand": "or less"}},
		{"several at once", func(in *itemInput) { in.SKU = ""; in.Name = ""; in.Price = dec("-5") },
			map[string]string{"Sku": "empty", "Name": "empty", "Price": "greater than"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := valid()
			tc.change(&in)
			_, err := validateItem(context.Background(), in, usd)
			got := violations(t, err)
			if len(got) != len(tc.want) {
				t.Errorf("violations = %v, want fields %v", got, tc.want)
			}
			for field, frag := range tc.want {
				if !strings.Contains(got[field], frag) {
					t.Errorf("%s: %q, want it to mention %q", field, got[field], frag)
				}
			}
		})
	}
}

func TestValidateItemDefaults(t *testing.T) {
	t.Parallel()
	calls := 0
	eur := func(context.Context) (string, error) { calls++; return "EUR", nil }
	it, err := validateItem(context.Background(), itemInput{SKU: " TOTE-1 ", Name: " Tote ", Price: dec("25.5")}, eur)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Item{SKU: "TOTE-1", Name: "Tote", PriceMinor: 2550, FairMarketValueMinor: 2550, Currency: "EUR", Active: true}
	if it != want {
		t.Errorf("item = %+v, want %+v", it, want)
	}
	if calls != 1 {
		t.Errorf("currency lookups = %d", calls)
	}

	// A given currency (in any case) is used without a lookup; the other
	// optional fields are taken as given.
	it, err = validateItem(context.Background(), itemInput{SKU: "K", Name: "K", Price: dec("1.500"), Currency: "bhd",
		FairMarketValue: dec("0"), TrackStock: ptr(true), Active: ptr(false), StockOnHand: 7, Category: "Books"}, eur)
	if err != nil {
		t.Fatal(err)
	}
	want = store.Item{SKU: "K", Name: "K", PriceMinor: 1500, Currency: "BHD", TrackStock: true, StockOnHand: 7, Category: "Books"}
	if it != want || calls != 1 {
		t.Errorf("item = %+v, want %+v (lookups %d)", it, want, calls)
	}

	// A failed lookup is the request's error as it is (503).
	down := func(context.Context) (string, error) {
		return "", apperr.Unavailable("down", errors.New("dial"))
	}
	if _, err := validateItem(context.Background(), itemInput{SKU: "K", Name: "K", Price: dec("1")}, down); !apperr.IsKind(err, apperr.KindUnavailable) {
		t.Errorf("err = %v, want unavailable", err)
	}
}

func TestValidateReserve(t *testing.T) {
	t.Parallel()
	const order = "0190a4d6-0000-7000-8000-000000000001"
	const item = "0190a4d6-0000-7000-8000-000000000002"
	line := func(n, q int32, id string) *inventoryv1.ReserveStockLine {
		return &inventoryv1.ReserveStockLine{LineNumber: n, Quantity: q, ItemId: id}
	}
	cases := []struct {
		name string
		req  *inventoryv1.ReserveStockRequest
		want map[string]string
	}{
		{"bad order id", &inventoryv1.ReserveStockRequest{OrderId: "x", Items: []*inventoryv1.ReserveStockLine{line(1, 1, item)}},
			map[string]string{"OrderId": "UUID"}},
		{"no lines", &inventoryv1.ReserveStockRequest{OrderId: order}, map[string]string{"Items": "at least one"}},
		{"too many lines", &inventoryv1.ReserveStockRequest{OrderId: order, Items: make([]*inventoryv1.ReserveStockLine, maxLines+1)},
			map[string]string{"Items": "500 lines or fewer"}},
		{"line shapes", &inventoryv1.ReserveStockRequest{OrderId: order, Items: []*inventoryv1.ReserveStockLine{
			line(0, 1, item), line(2, 0, item), line(2, 1, item), line(3, -4, item)}},
			map[string]string{"Items[0].LineNumber": "greater than 0", "Items[1].Quantity": "greater than 0",
				"Items[2].LineNumber": "more than once", "Items[3].Quantity": "greater than 0"}},
	}
	for _, tc := range cases {
		_, _, err := validateReserve(tc.req)
		got := violations(t, err)
		if len(got) != len(tc.want) {
			t.Errorf("%s: violations = %v, want %v", tc.name, got, tc.want)
		}
		for field, frag := range tc.want {
			if !strings.Contains(got[field], frag) {
				t.Errorf("%s: %s = %q, want %q", tc.name, field, got[field], frag)
			}
		}
	}
	// An item id that does not parse is left for the store to report as
	// not found, in line order.
	_, lines, err := validateReserve(&inventoryv1.ReserveStockRequest{OrderId: order, Items: []*inventoryv1.ReserveStockLine{line(1, 1, "nope")}})
	if err != nil || len(lines) != 1 || lines[0].ItemID.String() != "00000000-0000-0000-0000-000000000000" {
		t.Errorf("lines = %+v, err = %v", lines, err)
	}
}

func TestLineErrorMapping(t *testing.T) {
	t.Parallel()
	items := []*inventoryv1.ReserveStockLine{{ItemId: "a"}, {ItemId: "b"}}
	cases := []struct {
		le           *store.LineError
		code, field  string
		messageParts string
	}{
		{&store.LineError{Index: 1, Reason: store.ItemNotFound}, codeItemNotFound, "Items[1].ItemId", "Item 'b' was not found."},
		{&store.LineError{Index: 0, Reason: store.ItemInactive, SKU: "OLD"}, codeItemInactive, "Items[0].ItemId", "'OLD' is inactive"},
		{&store.LineError{Index: 1, Reason: store.InsufficientStock, SKU: "A", Available: 2, Requested: 3}, codeInsufficientStock,
			"Items[1].Quantity", "2 available, 3 requested"},
		{&store.LineError{Index: 0, Reason: store.ReservationMismatch, LineNumber: 4}, codeReservationMismatch, "Items[0]", "Line 4"},
		{&store.LineError{Index: 0, Reason: store.ReservationReleased, LineNumber: 4}, codeReservationReleased, "Items[0]", "released"},
		{&store.LineError{Index: 2, Reason: store.ReservationNotFound, LineNumber: 9}, codeReservationNotFound, "LineNumbers[2]", "Line 9"},
	}
	for _, tc := range cases {
		e, ok := apperr.As(lineError(tc.le, items))
		if !ok || e.Kind != apperr.KindInvalid || e.Code != tc.code || len(e.Violations) != 1 ||
			e.Violations[0].Field != tc.field || !strings.Contains(e.Violations[0].Message, tc.messageParts) {
			t.Errorf("reason %d: %v", tc.le.Reason, e)
		}
	}
	other := errors.New("boom")
	if lineError(other, nil) != other { //nolint:errorlint // the very same value
		t.Error("a plain error was rewritten")
	}
}
