package cohorts

import (
	"fmt"
	"sort"
)

// builtin is a read-only cohort every tenant has; its definition follows
// the tenant's calendar, so it is made at every read.
type builtin struct {
	name, description string
	definition        func(c Calendar) string
}

// The built-in cohorts (docs/cohorts.md, Built-in cohorts).
var builtins = map[string]builtin{
	// Gave last year and not this one is: the last gift fell in last
	// fiscal year (no gift is dated after today but for tomorrow's on the
	// year's last day, which starts the next year: docs/cohorts.md). As
	// a range of the lifetime rows' last gift it is counted from an index,
	// not from two years' gifts.
	"lybunt": {"LYBUNT", "Gave last fiscal year but not (yet) this one.", func(c Calendar) string {
		last, this := c.FiscalYear(-1)
		return fmt.Sprintf(`{"field":"lastGiftDate","op":"between","value":[%q,%q]}`, day(last), day(this.AddDate(0, 0, -1)))
	}},
	// Gave before last year and neither last year nor this one: the last
	// gift came before last fiscal year began.
	"sybunt": {"SYBUNT", "Gave in some fiscal year before last, but neither last fiscal year nor this one.", func(c Calendar) string {
		last, _ := c.FiscalYear(-1)
		return fmt.Sprintf(`{"field":"lastGiftDate","op":"<","value":%q}`, day(last))
	}},
	"first-time-donors": {"First-time donors", "Gave for the first time in this fiscal year.", func(c Calendar) string {
		start, _ := c.FiscalYear(0)
		return fmt.Sprintf(`{"field":"firstGiftDate","op":">=","value":%q}`, day(start))
	}},
	"lapsed": {"Lapsed donors", "Gave before, but nothing in the last 18 months.", func(c Calendar) string {
		return fmt.Sprintf(`{"all":[{"field":"giftCount","op":">=","value":1},{"field":"lastGiftDate","op":"<=","value":%q}]}`, day(c.Today.AddDate(0, -18, 0)))
	}},
	"major-donors": {"Major donors", "Gave at least the tenant's major-donor threshold in the last 12 months.", func(c Calendar) string {
		return fmt.Sprintf(`{"field":"totalGiven","op":">=","value":%q,"window":{"from":%q,"to":%q}}`,
			c.MajorDonorThreshold, day(c.Today.AddDate(-1, 0, 1)), day(c.Today))
	}},
	"monthly-donors": {"Monthly donors", "Have an active monthly recurring donation.", func(c Calendar) string {
		return `{"field":"hasActiveRecurring","op":"=","value":true,"frequency":"monthly"}`
	}},
	"new-this-month": {"New this month", "Contacts created this calendar month.", func(c Calendar) string {
		first := c.Today.AddDate(0, 0, 1-c.Today.Day())
		return fmt.Sprintf(`{"field":"createdAt","op":">=","value":%q}`, day(first))
	}},
}

// BuiltinIDs returns the built-ins' ids in a stable order.
func BuiltinIDs() []string {
	out := make([]string, 0, len(builtins))
	for k := range builtins {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsBuiltin reports whether id names a built-in cohort.
func IsBuiltin(id string) bool {
	_, ok := builtins[id]
	return ok
}

// builtinDefinition is a built-in's definition for the calendar, as JSON.
func builtinDefinition(id string, c Calendar) string { return builtins[id].definition(c) }

// BuiltinDefinition is a built-in's definition for the calendar, as JSON
// (benchmarks; "" for an unknown id).
func BuiltinDefinition(id string, c Calendar) string {
	if !IsBuiltin(id) {
		return ""
	}
	return builtinDefinition(id, c)
}
