package dashboard

import (
	"slices"
	"strconv"
	"time"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/money"
)

// roundDiv is a / b rounded half away from zero; b > 0.
func roundDiv(a, b int64) int64 {
	if a < 0 {
		return -((-a*2 + b) / (b * 2))
	}
	return (a*2 + b) / (b * 2)
}

// tenths writes a count of tenths as a decimal with one decimal: 125 →
// "12.5", -5 → "-0.5".
func tenths(t int64) *typev1.Decimal {
	sign := ""
	if t < 0 {
		sign, t = "-", -t
	}
	return &typev1.Decimal{Value: sign + strconv.FormatInt(t/10, 10) + "." + strconv.FormatInt(t%10, 10)}
}

// changePercent is (cur − prev) / prev in percent, one decimal; nil when
// prev is not positive (no base to compare with).
func changePercent(cur, prev int64) *typev1.Decimal {
	if prev <= 0 {
		return nil
	}
	return tenths(roundDiv((cur-prev)*1000, prev))
}

func amount(minor int64, currency string) *typev1.Decimal {
	return &typev1.Decimal{Value: money.FormatMinor(minor, currency)}
}

func amountFigure(cur, prev int64, currency string) *reportsv1.AmountFigure {
	return &reportsv1.AmountFigure{Current: amount(cur, currency), Previous: amount(prev, currency), ChangePercent: changePercent(cur, prev)}
}

func countFigure(cur, prev int64) *reportsv1.CountFigure {
	return &reportsv1.CountFigure{Current: cur, Previous: prev, ChangePercent: changePercent(cur, prev)}
}

// rate is part / whole in tenths of a percent; ok false without a whole.
func rate(part, whole int64) (int64, bool) {
	if whole <= 0 {
		return 0, false
	}
	return roundDiv(part*1000, whole), true
}

func rateFigure(curPart, curWhole, prevPart, prevWhole int64) *reportsv1.RateFigure {
	out := &reportsv1.RateFigure{}
	cur, okCur := rate(curPart, curWhole)
	prev, okPrev := rate(prevPart, prevWhole)
	if okCur {
		out.Current = tenths(cur)
	}
	if okPrev {
		out.Previous = tenths(prev)
	}
	if okCur && okPrev {
		out.ChangePercent = changePercent(cur, prev)
	}
	return out
}

func average(t Totals) int64 {
	if t.Gifts == 0 {
		return 0
	}
	return roundDiv(t.Minor, t.Gifts)
}

// Build is the dashboard of what the views answered for q.
func Build(raw Raw, q Query) *reportsv1.Dashboard {
	c := q.Currency
	cur, prev := raw.Amounts[0][c], raw.Amounts[1][c]
	d := &reportsv1.Dashboard{
		Period:         &reportsv1.DashboardPeriod{From: q.Current.From.Format(time.DateOnly), To: q.Current.To.Format(time.DateOnly)},
		Currency:       c,
		Raised:         amountFigure(cur.Minor, prev.Minor, c),
		Gifts:          countFigure(cur.Gifts, prev.Gifts),
		Donors:         countFigure(raw.Donors[0], raw.Donors[1]),
		NewDonors:      countFigure(raw.New[0], raw.New[1]),
		RetainedDonors: countFigure(raw.Retained[0], raw.Retained[1]),
		// Retention: the donors of the period a year earlier who gave
		// again in this one, over all of that earlier period's donors.
		RetentionRate: rateFigure(raw.Retained[0], raw.Donors[1], raw.Retained[1], raw.Donors[2]),
		AverageGift:   amountFigure(average(cur), average(prev), c),
		Recurring: &reportsv1.RecurringFigures{ActiveSchedules: raw.Recurring.Active, PastDue: raw.Recurring.PastDue,
			MonthlyRecurringRevenue: amount(raw.Recurring.MonthlyMinor, c)},
		ByFund:          make([]*reportsv1.FundFigure, 0, len(raw.Funds)),
		ByDay:           []*reportsv1.DayFigure{},
		OtherCurrencies: []*reportsv1.CurrencyFigure{},
	}
	for _, f := range raw.Funds {
		d.ByFund = append(d.ByFund, &reportsv1.FundFigure{FundId: f.ID, Name: f.Name, Raised: amount(f.Minor, c)})
	}
	for _, day := range q.Current.Days() {
		key := day.Format(time.DateOnly)
		t := raw.Days[key]
		d.ByDay = append(d.ByDay, &reportsv1.DayFigure{Date: key, Raised: amount(t.Minor, c), Gifts: t.Gifts})
	}
	others := make([]string, 0, len(raw.Amounts[0]))
	for k := range raw.Amounts[0] {
		if k != c {
			others = append(others, k)
		}
	}
	slices.Sort(others)
	for _, k := range others {
		t := raw.Amounts[0][k]
		d.OtherCurrencies = append(d.OtherCurrencies, &reportsv1.CurrencyFigure{Currency: k, Raised: amount(t.Minor, k), Gifts: t.Gifts})
	}
	return d
}
