// Package settings is the tenant's settings document (docs/operators.md,
// "Tenant settings"): GET and PUT /api/tenants/{tid}/settings, and the
// GetTenantSettings RPC other services read them with. The auth service
// owns every property, so a PUT is one transaction with one audit row.
package settings

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // IANA names resolve wherever the binary runs

	"google.golang.org/protobuf/types/known/structpb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/money"
)

// Defaults of a tenant that never set a property. The time zone is the
// organization profile's old default, so a tenant that saved no profile
// keeps counting its days where it did.
const (
	DefaultFiscalYearStartMonth = 1
	DefaultTimeZone             = "America/New_York"
	DefaultDailyBatchCloseTime  = "00:00"
)

// DefaultRetryDays are the default recurring retry days: 1, 3 and 7 days
// after an installment's first decline.
func DefaultRetryDays() []int32 { return []int32{1, 3, 7} }

// Limits of the values a PUT may set.
const (
	maxRetryDay  = 60
	maxRetryDays = 10
	// maxThreshold is the largest receipt threshold in major units.
	maxThreshold = 1_000_000_000
)

// Settings is the tenant's settings document as stored.
type Settings struct {
	DefaultCurrency       string
	FiscalYearStartMonth  int32
	TimeZone              string
	RecurringRetryDays    []int32
	DailyBatchCloseTime   string
	ReceiptThresholdMinor int64
	// UpdatedAt is nil before the first change.
	UpdatedAt *time.Time
}

// Defaults returns the settings of a tenant that set none, in currency.
func Defaults(currency string) Settings {
	return Settings{DefaultCurrency: currency, FiscalYearStartMonth: DefaultFiscalYearStartMonth, TimeZone: DefaultTimeZone,
		RecurringRetryDays: DefaultRetryDays(), DailyBatchCloseTime: DefaultDailyBatchCloseTime}
}

// snapshot is the document by wire name, for the audit row's changes; the
// threshold is written as the wire writes it.
func (s Settings) snapshot() map[string]any {
	days := s.RecurringRetryDays
	if days == nil {
		days = []int32{}
	}
	return map[string]any{"defaultCurrency": s.DefaultCurrency, "fiscalYearStartMonth": s.FiscalYearStartMonth, "timeZone": s.TimeZone,
		"recurringRetryDays": days, "dailyBatchCloseTime": s.DailyBatchCloseTime,
		"receiptThreshold": money.FormatMinor(s.ReceiptThresholdMinor, s.DefaultCurrency)}
}

// Changes names the properties that differ between before and after,
// with their old and new values; nil when none does.
func Changes(before, after Settings) map[string]audit.Change {
	return audit.Diff(before.snapshot(), after.snapshot())
}

// Patch is what a PUT carries: a nil property keeps its value.
type Patch struct {
	DefaultCurrency      *string
	FiscalYearStartMonth *int32
	TimeZone             *string
	// RecurringRetryDays is set when RetryDaysSet, to an empty list for
	// no retries.
	RecurringRetryDays  []int32
	RetryDaysSet        bool
	DailyBatchCloseTime *string
	// ReceiptThreshold is the decimal literal as the wire carried it.
	ReceiptThreshold *string
}

// PatchFromProto reads a PUT's body. The retry days come as a list of
// JSON values (so that [] and a missing property differ): each must be a
// whole number.
func PatchFromProto(req *authv1.UpdateTenantSettingsRequest) (Patch, error) {
	p := Patch{DefaultCurrency: req.DefaultCurrency, FiscalYearStartMonth: req.FiscalYearStartMonth, TimeZone: req.TimeZone,
		DailyBatchCloseTime: req.DailyBatchCloseTime}
	if t := req.GetReceiptThreshold(); t != nil {
		v := t.GetValue()
		p.ReceiptThreshold = &v
	}
	if req.GetRecurringRetryDays() == nil {
		return p, nil
	}
	days, err := retryDaysFromList(req.GetRecurringRetryDays())
	if err != nil {
		return Patch{}, err
	}
	p.RecurringRetryDays, p.RetryDaysSet = days, true
	return p, nil
}

func retryDaysFromList(l *structpb.ListValue) ([]int32, error) {
	days := make([]int32, 0, len(l.GetValues()))
	for i, v := range l.GetValues() {
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		if !ok || n.NumberValue != math.Trunc(n.NumberValue) || math.Abs(n.NumberValue) > math.MaxInt32 {
			return nil, apperr.Invalid(apperr.Violation{Field: fmt.Sprintf("RecurringRetryDays[%d]", i),
				Message: "'RecurringRetryDays' must be a list of whole numbers of days."})
		}
		days = append(days, int32(n.NumberValue))
	}
	return days, nil
}

var clockTime = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

// Apply checks each property p carries and returns cur with them set. A
// violation names the property (PascalCase, as every 400 does); nothing
// is applied when any is wrong. The threshold keeps its value in major
// units when only the currency changes (a currency with fewer decimals
// than it needs is a violation under ReceiptThreshold).
func Apply(cur Settings, p Patch) (Settings, error) {
	var v apperr.Violations
	next := cur
	next.RecurringRetryDays = append([]int32(nil), cur.RecurringRetryDays...)
	if p.DefaultCurrency != nil {
		if c := *p.DefaultCurrency; money.Known(c) {
			next.DefaultCurrency = c
		} else {
			v.Add("DefaultCurrency", "'DefaultCurrency' must be an ISO 4217 currency code such as USD.")
		}
	}
	if m := p.FiscalYearStartMonth; m != nil {
		if *m < 1 || *m > 12 {
			v.Add("FiscalYearStartMonth", "'FiscalYearStartMonth' must be from 1 to 12. You entered %d.", *m)
		} else {
			next.FiscalYearStartMonth = *m
		}
	}
	if tz := p.TimeZone; tz != nil {
		if ValidTimeZone(*tz) {
			next.TimeZone = *tz
		} else {
			v.Add("TimeZone", "'TimeZone' must be an IANA time zone name such as America/New_York.")
		}
	}
	if p.RetryDaysSet {
		if err := CheckRetryDays(p.RecurringRetryDays); err != "" {
			v.Add("RecurringRetryDays", "%s", err)
		} else {
			next.RecurringRetryDays = append([]int32{}, p.RecurringRetryDays...)
		}
	}
	if t := p.DailyBatchCloseTime; t != nil {
		if clockTime.MatchString(*t) {
			next.DailyBatchCloseTime = *t
		} else {
			v.Add("DailyBatchCloseTime", "'DailyBatchCloseTime' must be a time of day HH:MM, from 00:00 to 23:59.")
		}
	}
	applyThreshold(&next, cur, p, &v)
	if err := v.Err(); err != nil {
		return cur, err
	}
	return next, nil
}

// applyThreshold sets next's threshold: the one p carries, in next's
// currency, or cur's carried over to a new currency.
func applyThreshold(next *Settings, cur Settings, p Patch, v *apperr.Violations) {
	if p.ReceiptThreshold != nil {
		minor, err := money.ParseMinor(*p.ReceiptThreshold, next.DefaultCurrency)
		switch {
		case errors.Is(err, money.ErrPrecision):
			v.Add("ReceiptThreshold", "'ReceiptThreshold' has more decimals than %s has.", next.DefaultCurrency)
		case err != nil || minor < 0 || minor > maxThreshold*pow10(money.Exponent(next.DefaultCurrency)):
			v.Add("ReceiptThreshold", "'ReceiptThreshold' must be an amount from 0 to %d.", maxThreshold)
		default:
			next.ReceiptThresholdMinor = minor
		}
		return
	}
	if next.DefaultCurrency == cur.DefaultCurrency {
		return
	}
	minor, err := money.ParseMinor(money.FormatMinor(cur.ReceiptThresholdMinor, cur.DefaultCurrency), next.DefaultCurrency)
	if err != nil {
		v.Add("ReceiptThreshold", "The receipt threshold %s has more decimals than %s has: send a 'ReceiptThreshold' with the new currency.",
			money.FormatMinor(cur.ReceiptThresholdMinor, cur.DefaultCurrency), next.DefaultCurrency)
		return
	}
	next.ReceiptThresholdMinor = minor
}

func pow10(n int) int64 {
	out := int64(1)
	for range n {
		out *= 10
	}
	return out
}

// ValidTimeZone reports whether name is an IANA time zone name this binary
// resolves ("Local", the process's own, is not one).
func ValidTimeZone(name string) bool {
	if strings.TrimSpace(name) == "" || name == "Local" {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}

// CheckRetryDays returns why days are not a retry schedule ("" when they
// are): increasing, each from 1 to 60, at most 10.
func CheckRetryDays(days []int32) string {
	if len(days) > maxRetryDays {
		return fmt.Sprintf("'RecurringRetryDays' must hold at most %d days.", maxRetryDays)
	}
	for i, d := range days {
		if d < 1 || d > maxRetryDay || (i > 0 && d <= days[i-1]) {
			return fmt.Sprintf("'RecurringRetryDays' must increase, each from 1 to %d.", maxRetryDay)
		}
	}
	return ""
}
