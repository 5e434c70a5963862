package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// num is a number of the dashboard: the API may write it as a JSON
// number, a decimal string or an amount object ({"amount": …}).
type num float64

// UnmarshalJSON reads any of the three forms; null is 0.
func (n *num) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*n = 0
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("console: a number: %w", err)
		}
		*n = num(f)
	case b[0] == '{':
		var a struct {
			Amount num `json:"amount"`
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		*n = a.Amount
	default:
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return fmt.Errorf("console: a number: %w", err)
		}
		*n = num(f)
	}
	return nil
}

// compared is a figure of the period against the same period a year
// earlier.
type compared struct {
	Current       num  `json:"current"`
	Previous      num  `json:"previous"`
	ChangePercent *num `json:"changePercent"`
}

// dashboard is the body of GET /api/tenants/{tid}/dashboard (issue 34).
type dashboard struct {
	Period struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"period"`
	Raised         compared `json:"raised"`
	Gifts          compared `json:"gifts"`
	Donors         compared `json:"donors"`
	NewDonors      compared `json:"newDonors"`
	RetainedDonors compared `json:"retainedDonors"`
	RetentionRate  compared `json:"retentionRate"`
	AverageGift    compared `json:"averageGift"`
	Recurring      struct {
		ActiveSchedules         num `json:"activeSchedules"`
		MonthlyRecurringRevenue num `json:"monthlyRecurringRevenue"`
		PastDue                 num `json:"pastDue"`
	} `json:"recurring"`
	ByFund []struct {
		FundID string `json:"fundId"`
		Name   string `json:"name"`
		Raised num    `json:"raised"`
	} `json:"byFund"`
	ByDay []dayRow `json:"byDay"`
}

type dayRow struct {
	Date   string `json:"date"`
	Raised num    `json:"raised"`
	Gifts  num    `json:"gifts"`
}

type dashboardData struct {
	Period, Date string
	// Unavailable says why there are no numbers (the route is missing on
	// this server, or refused).
	Unavailable string
	D           *dashboard
	Figures     []figure
	Chart       template.HTML
	Days        []chartDay
}

type figure struct {
	Label, Current, Previous, Change string
}

func (c *Console) dashboardRoutes() {
	c.mux.HandleFunc("GET "+Prefix+"/t/{tid}/dashboard", c.dashboardPage)
}

// dashboardPage shows the period's numbers and raised by day against the
// same days a year earlier (two reads of the route: the period, and the
// period a year before it).
func (c *Console) dashboardPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "dashboard")
	if !ok {
		return
	}
	p.Title = "Dashboard"
	d := &dashboardData{Period: r.FormValue("period"), Date: r.FormValue("date")}
	if d.Period != "quarter" && d.Period != "fiscal-year" {
		d.Period = "month"
	}
	day, err := time.Parse(time.DateOnly, d.Date)
	if err != nil {
		day = c.now().UTC()
	}
	d.Date = day.Format(time.DateOnly)
	p.Data = d
	now, res := c.readDashboard(r, p.Tenant.ID, d.Period, day)
	switch {
	case res.Status == http.StatusNotFound:
		d.Unavailable = "The dashboard is not available on this server yet: its route answered 404. The other pages work."
	case res.Status == http.StatusForbidden:
		c.refused(w, r, p, res)
		return
	case !res.ok() || now == nil:
		d.Unavailable = "The dashboard could not be read: " + res.message()
	default:
		before, _ := c.readDashboard(r, p.Tenant.ID, d.Period, day.AddDate(-1, 0, 0))
		d.D, d.Figures = now, figures(now)
		d.Chart, d.Days = barChart(now, before)
	}
	c.render(w, r, http.StatusOK, "dashboard", p)
}

func (c *Console) readDashboard(r *http.Request, tid, period string, day time.Time) (*dashboard, result) {
	q := url.Values{"period": {period}, "date": {day.Format(time.DateOnly)}}
	res := c.get(r, tenantPath(tid, "/dashboard?"+q.Encode()))
	var d dashboard
	if !res.ok() || res.decode(&d) != nil {
		return nil, res
	}
	return &d, res
}

func figures(d *dashboard) []figure {
	rows := []struct {
		label string
		v     compared
		pct   bool
	}{
		{"Raised", d.Raised, false}, {"Gifts", d.Gifts, false}, {"Donors", d.Donors, false},
		{"New donors", d.NewDonors, false}, {"Retained donors", d.RetainedDonors, false},
		{"Retention rate", d.RetentionRate, true}, {"Average gift", d.AverageGift, false},
	}
	out := make([]figure, 0, len(rows))
	for _, r := range rows {
		f := figure{Label: r.label, Current: format(r.v.Current, r.pct), Previous: format(r.v.Previous, r.pct), Change: "—"}
		if r.v.ChangePercent != nil {
			f.Change = fmt.Sprintf("%+.1f %%", float64(*r.v.ChangePercent))
		}
		out = append(out, f)
	}
	return out
}

// format writes a figure with thousands separators (two decimals when it
// has cents); a rate as a percentage.
func format(v num, pct bool) string {
	f := float64(v)
	if pct {
		if f <= 1 {
			f *= 100
		}
		return fmt.Sprintf("%.1f %%", f)
	}
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimSuffix(s, ".00")
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}
