package settings

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
)

func ptr[T any](v T) *T { return &v }

// TestApply: each property, in range and out of it; a partial patch
// changes only what it carries; a violation applies nothing.
func TestApply(t *testing.T) {
	t.Parallel()
	cur := Defaults("USD")
	cur.ReceiptThresholdMinor = 25000 // 250.00
	for _, c := range []struct {
		name string
		p    Patch
		// field is the property of the one violation, "" for none.
		field   string
		want    func(*Settings)
		changed []string
	}{
		{name: "empty patch", p: Patch{}, want: func(*Settings) {}},
		{name: "currency", p: Patch{DefaultCurrency: ptr("EUR")}, want: func(s *Settings) { s.DefaultCurrency = "EUR" },
			changed: []string{"defaultCurrency"}},
		{name: "currency unknown", p: Patch{DefaultCurrency: ptr("XYZ")}, field: "DefaultCurrency"},
		{name: "currency lowercase", p: Patch{DefaultCurrency: ptr("usd")}, field: "DefaultCurrency"},
		{name: "currency to JPY keeps the major value", p: Patch{DefaultCurrency: ptr("JPY")},
			want: func(s *Settings) { s.DefaultCurrency, s.ReceiptThresholdMinor = "JPY", 250 }, changed: []string{"defaultCurrency", "receiptThreshold"}},
		{name: "currency with its threshold", p: Patch{DefaultCurrency: ptr("JPY"), ReceiptThreshold: ptr("1000")},
			want: func(s *Settings) { s.DefaultCurrency, s.ReceiptThresholdMinor = "JPY", 1000 }, changed: []string{"defaultCurrency", "receiptThreshold"}},
		{name: "fiscal month 1", p: Patch{FiscalYearStartMonth: ptr[int32](1)}, want: func(*Settings) {}},
		{name: "fiscal month 12", p: Patch{FiscalYearStartMonth: ptr[int32](12)}, want: func(s *Settings) { s.FiscalYearStartMonth = 12 },
			changed: []string{"fiscalYearStartMonth"}},
		{name: "fiscal month 0", p: Patch{FiscalYearStartMonth: ptr[int32](0)}, field: "FiscalYearStartMonth"},
		{name: "fiscal month 13", p: Patch{FiscalYearStartMonth: ptr[int32](13)}, field: "FiscalYearStartMonth"},
		{name: "time zone", p: Patch{TimeZone: ptr("Europe/Paris")}, want: func(s *Settings) { s.TimeZone = "Europe/Paris" }, changed: []string{"timeZone"}},
		{name: "time zone UTC", p: Patch{TimeZone: ptr("UTC")}, want: func(s *Settings) { s.TimeZone = "UTC" }, changed: []string{"timeZone"}},
		{name: "time zone unknown", p: Patch{TimeZone: ptr("Mars/Olympus")}, field: "TimeZone"},
		{name: "time zone Local", p: Patch{TimeZone: ptr("Local")}, field: "TimeZone"},
		{name: "time zone empty", p: Patch{TimeZone: ptr("")}, field: "TimeZone"},
		{name: "retry days", p: Patch{RetryDaysSet: true, RecurringRetryDays: []int32{2, 5}}, want: func(s *Settings) { s.RecurringRetryDays = []int32{2, 5} },
			changed: []string{"recurringRetryDays"}},
		{name: "no retries", p: Patch{RetryDaysSet: true, RecurringRetryDays: []int32{}}, want: func(s *Settings) { s.RecurringRetryDays = []int32{} },
			changed: []string{"recurringRetryDays"}},
		{name: "retry day 0", p: Patch{RetryDaysSet: true, RecurringRetryDays: []int32{0, 3}}, field: "RecurringRetryDays"},
		{name: "retry day 61", p: Patch{RetryDaysSet: true, RecurringRetryDays: []int32{61}}, field: "RecurringRetryDays"},
		{name: "retry days not increasing", p: Patch{RetryDaysSet: true, RecurringRetryDays: []int32{3, 3}}, field: "RecurringRetryDays"},
		{name: "too many retry days", p: Patch{RetryDaysSet: true, RecurringRetryDays: []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}, field: "RecurringRetryDays"},
		{name: "close time", p: Patch{DailyBatchCloseTime: ptr("17:30")}, want: func(s *Settings) { s.DailyBatchCloseTime = "17:30" },
			changed: []string{"dailyBatchCloseTime"}},
		{name: "close time 23:59", p: Patch{DailyBatchCloseTime: ptr("23:59")}, want: func(s *Settings) { s.DailyBatchCloseTime = "23:59" },
			changed: []string{"dailyBatchCloseTime"}},
		{name: "close time 24:00", p: Patch{DailyBatchCloseTime: ptr("24:00")}, field: "DailyBatchCloseTime"},
		{name: "close time 9:00", p: Patch{DailyBatchCloseTime: ptr("9:00")}, field: "DailyBatchCloseTime"},
		{name: "close time 12:60", p: Patch{DailyBatchCloseTime: ptr("12:60")}, field: "DailyBatchCloseTime"},
		{name: "threshold", p: Patch{ReceiptThreshold: ptr("100.5")}, want: func(s *Settings) { s.ReceiptThresholdMinor = 10050 },
			changed: []string{"receiptThreshold"}},
		{name: "threshold zero", p: Patch{ReceiptThreshold: ptr("0")}, want: func(s *Settings) { s.ReceiptThresholdMinor = 0 },
			changed: []string{"receiptThreshold"}},
		{name: "threshold same value", p: Patch{ReceiptThreshold: ptr("250.00")}, want: func(*Settings) {}},
		{name: "threshold negative", p: Patch{ReceiptThreshold: ptr("-1")}, field: "ReceiptThreshold"},
		{name: "threshold too precise", p: Patch{ReceiptThreshold: ptr("1.001")}, field: "ReceiptThreshold"},
		{name: "threshold too large", p: Patch{ReceiptThreshold: ptr("1000000000.01")}, field: "ReceiptThreshold"},
		{name: "threshold not a number", p: Patch{ReceiptThreshold: ptr("1e3")}, field: "ReceiptThreshold"},
		{name: "partial: two properties", p: Patch{FiscalYearStartMonth: ptr[int32](7), TimeZone: ptr("Asia/Tokyo")},
			want: func(s *Settings) { s.FiscalYearStartMonth, s.TimeZone = 7, "Asia/Tokyo" }, changed: []string{"fiscalYearStartMonth", "timeZone"}},
		{name: "one bad property applies none", p: Patch{FiscalYearStartMonth: ptr[int32](7), TimeZone: ptr("Nowhere")}, field: "TimeZone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Apply(cur, c.p)
			if c.field != "" {
				var ae *apperr.Error
				if !errors.As(err, &ae) || ae.Kind != apperr.KindInvalid || len(ae.Violations) != 1 || ae.Violations[0].Field != c.field {
					t.Fatalf("Apply = %v, want one violation under %s", err, c.field)
				}
				if !strings.Contains(ae.Violations[0].Message, c.field) && c.field != "ReceiptThreshold" {
					t.Errorf("message %q does not name %s", ae.Violations[0].Message, c.field)
				}
				if !reflect.DeepEqual(got, cur) {
					t.Errorf("a refused patch changed the settings: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			want := cur
			want.RecurringRetryDays = slices.Clone(cur.RecurringRetryDays)
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Apply = %+v, want %+v", got, want)
			}
			var changed []string
			for k := range Changes(cur, got) {
				changed = append(changed, k)
			}
			slices.Sort(changed)
			if !slices.Equal(changed, c.changed) {
				t.Errorf("changed %v, want %v", changed, c.changed)
			}
		})
	}
}

// TestApplyCurrencyWithFewerDecimals: a threshold the new currency cannot
// hold is refused under ReceiptThreshold, not rounded.
func TestApplyCurrencyWithFewerDecimals(t *testing.T) {
	t.Parallel()
	cur := Defaults("USD")
	cur.ReceiptThresholdMinor = 25050
	_, err := Apply(cur, Patch{DefaultCurrency: ptr("JPY")})
	var ae *apperr.Error
	if !errors.As(err, &ae) || len(ae.Violations) != 1 || ae.Violations[0].Field != "ReceiptThreshold" {
		t.Fatalf("Apply = %v, want a violation under ReceiptThreshold", err)
	}
}

// TestPatchFromProto: a property left out stays nil, [] is "no retries",
// and the retry days must be whole numbers.
func TestPatchFromProto(t *testing.T) {
	t.Parallel()
	list := func(vs ...any) *structpb.ListValue {
		l, err := structpb.NewList(vs)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name  string
		req   *authv1.UpdateTenantSettingsRequest
		field string
		check func(Patch) bool
	}{
		{"nothing", &authv1.UpdateTenantSettingsRequest{}, "", func(p Patch) bool { return reflect.DeepEqual(p, Patch{}) }},
		{"empty list", &authv1.UpdateTenantSettingsRequest{RecurringRetryDays: list()}, "",
			func(p Patch) bool { return p.RetryDaysSet && len(p.RecurringRetryDays) == 0 }},
		{"days", &authv1.UpdateTenantSettingsRequest{RecurringRetryDays: list(1.0, 4.0)}, "",
			func(p Patch) bool { return p.RetryDaysSet && slices.Equal(p.RecurringRetryDays, []int32{1, 4}) }},
		{"threshold", &authv1.UpdateTenantSettingsRequest{ReceiptThreshold: &typev1.Decimal{Value: "5.00"}}, "",
			func(p Patch) bool { return p.ReceiptThreshold != nil && *p.ReceiptThreshold == "5.00" }},
		{"fraction", &authv1.UpdateTenantSettingsRequest{RecurringRetryDays: list(1.5)}, "RecurringRetryDays[0]", nil},
		{"text", &authv1.UpdateTenantSettingsRequest{RecurringRetryDays: list(1.0, "3")}, "RecurringRetryDays[1]", nil},
		{"huge", &authv1.UpdateTenantSettingsRequest{RecurringRetryDays: list(1e12)}, "RecurringRetryDays[0]", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := PatchFromProto(c.req)
			if c.field != "" {
				var ae *apperr.Error
				if !errors.As(err, &ae) || len(ae.Violations) != 1 || ae.Violations[0].Field != c.field {
					t.Fatalf("PatchFromProto = %v, want a violation under %s", err, c.field)
				}
				return
			}
			if err != nil || !c.check(p) {
				t.Errorf("PatchFromProto = %+v, %v", p, err)
			}
		})
	}
}
