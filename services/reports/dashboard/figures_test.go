package dashboard

import (
	"testing"
	"time"

	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
)

func value(d *typev1.Decimal) string {
	if d == nil {
		return "null"
	}
	return d.GetValue()
}

// TestChangePercent: one decimal, rounded half away from zero, null
// without a base.
func TestChangePercent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cur, prev int64
		want      string
	}{
		{410, 150, "173.3"},
		{150, 410, "-63.4"},
		{2, 2, "0.0"},
		{0, 5, "-100.0"},
		{5, 0, "null"},
		{0, 0, "null"},
		{1, 3, "-66.7"},  // −66.666…
		{1, 8, "-87.5"},  // exactly half a tenth away: −87.5
		{3, 16, "-81.3"}, // −81.25 rounds away from zero
		{17, 16, "6.3"},  // 6.25
		{1_000_000_000_000, 1, "99999999999900.0"},
	} {
		if got := value(changePercent(c.cur, c.prev)); got != c.want {
			t.Errorf("changePercent(%d, %d) = %s, want %s", c.cur, c.prev, got, c.want)
		}
	}
}

// TestRateFigure: retention in percent; a period without a base is null,
// and so is the change.
func TestRateFigure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                     string
		curPart, curWhole        int64
		prevPart, prevWhole      int64
		current, previous, delta string
	}{
		{"both", 1, 2, 1, 1, "50.0", "100.0", "-50.0"},
		{"thirds", 1, 3, 2, 3, "33.3", "66.7", "-50.1"},
		{"no donors a year earlier", 0, 0, 1, 4, "null", "25.0", "null"},
		{"no donors two years earlier", 3, 4, 0, 0, "75.0", "null", "null"},
		{"none retained before", 1, 4, 0, 4, "25.0", "0.0", "null"},
	} {
		f := rateFigure(c.curPart, c.curWhole, c.prevPart, c.prevWhole)
		if got := [3]string{value(f.Current), value(f.Previous), value(f.ChangePercent)}; got != [3]string{c.current, c.previous, c.delta} {
			t.Errorf("%s: %v, want [%s %s %s]", c.name, got, c.current, c.previous, c.delta)
		}
	}
}

// TestBuild: the tenant's currency in the figures, others apart and
// sorted, every day of the period present, the average rounded.
func TestBuild(t *testing.T) {
	t.Parallel()
	span := Span{From: date(t, "2024-02-01"), To: date(t, "2024-02-29")}
	raw := Raw{
		Amounts: [2]map[string]Totals{
			{"USD": {Minor: 1000, Gifts: 3}, "JPY": {Minor: 500, Gifts: 1}, "EUR": {Minor: 250, Gifts: 2}},
			{"USD": {Minor: 500, Gifts: 2}},
		},
		Donors: [3]int64{3, 2, 0},
		Days:   map[string]Totals{"2024-02-29": {Minor: 1000, Gifts: 3}},
		Funds:  []Fund{{ID: "f", Name: "General", Minor: 1000}},
	}
	d := Build(raw, Query{Currency: "USD", Location: time.UTC, Current: span})
	if d.GetPeriod().GetFrom() != "2024-02-01" || d.GetPeriod().GetTo() != "2024-02-29" {
		t.Errorf("period %v", d.GetPeriod())
	}
	if value(d.GetRaised().GetCurrent()) != "10.00" || value(d.GetAverageGift().GetCurrent()) != "3.33" || value(d.GetAverageGift().GetPrevious()) != "2.50" {
		t.Errorf("raised %v, average %v", d.GetRaised(), d.GetAverageGift())
	}
	if n := len(d.GetByDay()); n != 29 || value(d.GetByDay()[28].GetRaised()) != "10.00" || value(d.GetByDay()[0].GetRaised()) != "0.00" {
		t.Errorf("%d days: %v", n, d.GetByDay())
	}
	others := d.GetOtherCurrencies()
	if len(others) != 2 || others[0].GetCurrency() != "EUR" || value(others[0].GetRaised()) != "2.50" || others[1].GetCurrency() != "JPY" || value(others[1].GetRaised()) != "500" {
		t.Errorf("other currencies %v", others)
	}
	if value(d.GetRetentionRate().GetCurrent()) != "0.0" || value(d.GetRetentionRate().GetPrevious()) != "null" {
		t.Errorf("retention %v", d.GetRetentionRate())
	}
}
