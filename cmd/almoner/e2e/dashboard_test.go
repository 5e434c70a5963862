package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// dashboardFigure is one {current, previous, changePercent} of a
// dashboard; a null changePercent or rate is nil.
type dashboardFigure struct {
	Current       *float64 `json:"current"`
	Previous      *float64 `json:"previous"`
	ChangePercent *float64 `json:"changePercent"`
}

type dashboardDoc struct {
	UserID string `json:"userId"`
	Period struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"period"`
	Currency       string          `json:"currency"`
	Raised         dashboardFigure `json:"raised"`
	Gifts          dashboardFigure `json:"gifts"`
	Donors         dashboardFigure `json:"donors"`
	NewDonors      dashboardFigure `json:"newDonors"`
	RetainedDonors dashboardFigure `json:"retainedDonors"`
	RetentionRate  dashboardFigure `json:"retentionRate"`
	AverageGift    dashboardFigure `json:"averageGift"`
	Recurring      struct {
		ActiveSchedules         float64 `json:"activeSchedules"`
		MonthlyRecurringRevenue float64 `json:"monthlyRecurringRevenue"`
		PastDue                 float64 `json:"pastDue"`
	} `json:"recurring"`
	ByFund []struct {
		FundID string  `json:"fundId"`
		Name   string  `json:"name"`
		Raised float64 `json:"raised"`
	} `json:"byFund"`
	ByDay []struct {
		Date   string  `json:"date"`
		Raised float64 `json:"raised"`
		Gifts  float64 `json:"gifts"`
	} `json:"byDay"`
	OtherCurrencies []struct {
		Currency string  `json:"currency"`
		Raised   float64 `json:"raised"`
		Gifts    float64 `json:"gifts"`
	} `json:"otherCurrencies"`
	PendingAcknowledgements float64 `json:"pendingAcknowledgements"`
	LapsedInPortfolio       float64 `json:"lapsedInPortfolio"`
	PastDueSchedules        float64 `json:"pastDueSchedules"`
}

// f64 is a figure's value for messages: "null" for nil.
func f64(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// check compares a figure with want (current, previous, changePercent;
// "null" for a null).
func (f dashboardFigure) check(t *testing.T, name string, cur, prev, change string) {
	t.Helper()
	if got := [3]string{f64(f.Current), f64(f.Previous), f64(f.ChangePercent)}; got != [3]string{cur, prev, change} {
		t.Errorf("%s = %v, want [%s %s %s]", name, got, cur, prev, change)
	}
}

// TestDashboard gives a hand-made set of gifts across three years in a
// tenant whose profile counts days in Los Angeles and whose fiscal year
// starts in July (the deployment's fallback setting), and reads the
// dashboard: current against a year earlier, new and retained donors, a
// refund, a void and a full refund moving the figures, another currency
// listed apart, the zone's day bounds, quarters of the fiscal year, per
// day and per fund, the recurring figures; then portfolios: assignment
// (400 for a non-member), a fundraiser's own dashboard and work list,
// another user's needing users:manage, `me` with a key, pending
// acknowledgements falling after a letter run; another tenant's gifts
// never counted; 403 without the scope.
func TestDashboard(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{
		"ALMONER_ARGON2_MEMORY_KIB": "64", "ALMONER_ARGON2_TIME": "1", "ALMONER_PUBLIC_URL": staffPublicURL}})
	f := newOrderFixture(t, c)
	tn := f.tn
	profile := map[string]any{}
	for k, v := range receiptProfile {
		profile[k] = v
	}
	profile["timeZone"] = "America/Los_Angeles"
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, profile).Expect(t, http.StatusOK)
	// A July fiscal year: the dashboard reads the tenant's settings.
	c.Do(t, "PUT", tPath(tn.ID, "/settings"), tn.Key, map[string]any{"fiscalYearStartMonth": 7}).Expect(t, http.StatusOK)
	// Orders keeps period rows in the tenant's calendar from here on, as
	// its housekeeping would after reading the settings: every gift below
	// reaches them through the triggers (recorded, backdated, refunded,
	// voided). "period rows and gifts agree" reads the gifts too.
	givingCalendar(t, c, tn.ID, "America/Los_Angeles", 7)
	building := c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "Building"}).Expect(t, http.StatusCreated).Map(t)["id"].(string)

	contact := func(tn apptest.Tenant, name string) float64 {
		return c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": name, "lastName": "Donor"}).
			Expect(t, http.StatusCreated).Map(t)["id"].(float64)
	}
	give := func(tn apptest.Tenant, who float64, fund string, amount float64, currency, at string) string {
		body := map[string]any{"contactId": who, "currency": currency,
			"donations": []any{map[string]any{"fundId": fund, "amount": amount}},
			"payments":  []any{map[string]any{"paymentMethod": "Cash", "amount": amount}}}
		id := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
		if at != "" {
			backdate(t, c, tn.ID, id, at)
		}
		return id
	}
	read := func(path, key string, headers ...string) dashboardDoc {
		t.Helper()
		var d dashboardDoc
		c.Do(t, "GET", path, key, nil, headers...).Expect(t, http.StatusOK).JSON(t, &d)
		return d
	}
	dash := tPath(tn.ID, "/dashboard")

	a, b, cc, d, e, g, h := contact(tn, "A"), contact(tn, "B"), contact(tn, "C"), contact(tn, "D"), contact(tn, "E"), contact(tn, "G"), contact(tn, "H")
	const la = " America/Los_Angeles"
	give(tn, a, f.fund, 10, "USD", "2023-03-05 12:00"+la)
	give(tn, a, f.fund, 100, "USD", "2024-03-05 12:00"+la)
	give(tn, a, f.fund, 150, "USD", "2025-03-05 12:00"+la)
	give(tn, a, f.fund, 25, "EUR", "2025-03-06 12:00"+la)
	give(tn, b, f.fund, 50, "USD", "2024-03-20 12:00"+la)
	give(tn, b, f.fund, 25, "USD", "2025-02-28 23:50"+la)  // March 1 in UTC: February here
	give(tn, cc, f.fund, 40, "USD", "2025-03-31 23:30"+la) // April 1 in UTC: March here
	give(tn, d, f.fund, 5, "USD", "2020-01-10 12:00"+la)
	give(tn, d, building, 200, "USD", "2025-03-10 12:00"+la)
	refunded := give(tn, e, f.fund, 30, "USD", "2025-03-12 12:00"+la)
	voided := give(tn, g, f.fund, 70, "USD", "2025-03-15 12:00"+la)
	whole := give(tn, h, f.fund, 60, "USD", "2025-03-20 12:00"+la)

	// The other tenant gives in the same month: never counted here.
	other := newOrderFixture(t, c)
	give(other.tn, other.contactID, other.fund, 999, "USD", "2025-03-10 12:00"+la)

	month := dash + "?period=month&date=2025-03-10"
	t.Run("refunds and voids move the figures", func(t *testing.T) {
		before := read(month, tn.Key)
		before.Raised.check(t, "raised before", "550", "150", "266.7")
		before.Gifts.check(t, "gifts before", "6", "2", "200")
		c.Do(t, "POST", tPath(tn.ID, "/orders/", refunded, "/refunds"), tn.Key, map[string]any{"amount": 10}).Expect(t, http.StatusCreated)
		c.Do(t, "POST", tPath(tn.ID, "/orders/", voided, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
		c.Do(t, "POST", tPath(tn.ID, "/orders/", whole, "/refunds"), tn.Key, map[string]any{"amount": 60}).Expect(t, http.StatusCreated)
	})

	t.Run("month against a year earlier", func(t *testing.T) {
		m := read(month, tn.Key)
		if m.Period.From != "2025-03-01" || m.Period.To != "2025-03-31" || m.Currency != "USD" {
			t.Errorf("period %v, currency %s", m.Period, m.Currency)
		}
		// A 150, C 40, D 200, E 30 − 10; G voided, H refunded in full.
		m.Raised.check(t, "raised", "410", "150", "173.3")
		m.Gifts.check(t, "gifts", "4", "2", "100")
		m.Donors.check(t, "donors", "4", "2", "100")
		// C and E gave for the first time; D gave in 2020. B in 2024.
		m.NewDonors.check(t, "newDonors", "2", "1", "100")
		// A gave in March 2024 and again; in 2024, A had given in 2023.
		m.RetainedDonors.check(t, "retainedDonors", "1", "1", "0")
		m.RetentionRate.check(t, "retentionRate", "50", "100", "-50")
		m.AverageGift.check(t, "averageGift", "102.5", "75", "36.7")
		if len(m.OtherCurrencies) != 1 || m.OtherCurrencies[0].Currency != "EUR" || m.OtherCurrencies[0].Raised != 25 || m.OtherCurrencies[0].Gifts != 1 {
			t.Errorf("otherCurrencies %+v", m.OtherCurrencies)
		}
		if len(m.ByFund) != 2 || m.ByFund[0].FundID != f.fund || m.ByFund[0].Raised != 210 || m.ByFund[1].Name != "Building" || m.ByFund[1].Raised != 200 {
			t.Errorf("byFund %+v", m.ByFund)
		}
		days := map[string][2]float64{}
		for _, x := range m.ByDay {
			days[x.Date] = [2]float64{x.Raised, x.Gifts}
		}
		if len(m.ByDay) != 31 || m.ByDay[0].Date != "2025-03-01" || days["2025-03-01"] != [2]float64{} ||
			days["2025-03-05"] != [2]float64{150, 1} || days["2025-03-12"] != [2]float64{20, 1} || days["2025-03-31"] != [2]float64{40, 1} {
			t.Errorf("byDay %+v", m.ByDay)
		}
	})

	t.Run("quarters and years of a July fiscal year", func(t *testing.T) {
		q := read(dash+"?period=quarter&date=2025-03-10", tn.Key)
		if q.Period.From != "2025-01-01" || q.Period.To != "2025-03-31" {
			t.Errorf("quarter %v", q.Period)
		}
		q.Raised.check(t, "quarter raised", "435", "150", "190")
		q.Donors.check(t, "quarter donors", "5", "2", "150")
		q.RetainedDonors.check(t, "quarter retained", "2", "1", "100")
		q.Period = read(dash+"?period=quarter&date=2025-07-01", tn.Key).Period
		if q.Period.From != "2025-07-01" || q.Period.To != "2025-09-30" {
			t.Errorf("first quarter %v", q.Period)
		}
		y := read(dash+"?period=fiscal-year&date=2025-03-10", tn.Key)
		if y.Period.From != "2024-07-01" || y.Period.To != "2025-06-30" || len(y.ByDay) != 365 {
			t.Errorf("fiscal year %v, %d days", y.Period, len(y.ByDay))
		}
		y.Raised.check(t, "year raised", "435", "150", "190")
		for _, bad := range []string{"?period=week", "?date=2025-02-30", "?date=03/10/2025", "?date=1066-10-14"} {
			c.Do(t, "GET", dash+bad, tn.Key, nil).Expect(t, http.StatusBadRequest)
		}
		// Defaults: this month, today.
		read(dash, tn.Key)
	})

	t.Run("period rows and gifts agree", func(t *testing.T) {
		paths := []string{month, dash + "?period=quarter&date=2025-03-10", dash + "?period=fiscal-year&date=2025-03-10",
			dash + "?period=month&date=2024-03-10", dash + "?period=fiscal-year&date=2023-07-01"}
		fromRows := make([]string, len(paths))
		for i, p := range paths {
			fromRows[i] = string(c.Do(t, "GET", p, tn.Key, nil).Expect(t, http.StatusOK).Body)
		}
		// Another calendar in the copy: the dashboard reads the gifts.
		givingCalendar(t, c, tn.ID, "UTC", 1)
		for i, p := range paths {
			if fromGifts := string(c.Do(t, "GET", p, tn.Key, nil).Expect(t, http.StatusOK).Body); fromGifts != fromRows[i] {
				t.Errorf("%s from the period rows:\n%s\nfrom the gifts:\n%s", p, fromRows[i], fromGifts)
			}
		}
		givingCalendar(t, c, tn.ID, "America/Los_Angeles", 7)
	})

	// The portfolio subtest assigns the recurring donor (subtests without
	// t.Parallel run in order).
	var recurringDonor float64
	t.Run("recurring", func(t *testing.T) {
		r := contact(tn, "R")
		body := map[string]any{"contactId": r, "currency": "USD",
			"donations": []any{map[string]any{"fundId": f.fund, "amount": 1}},
			"payments":  []any{map[string]any{"paymentMethod": "Cash", "amount": 1}},
			"recurringDonations": []any{
				map[string]any{"fundId": f.fund, "amount": 20, "frequency": "monthly"},
				map[string]any{"fundId": f.fund, "amount": 12, "frequency": "weekly"},
				map[string]any{"fundId": f.fund, "amount": 120, "frequency": "annually"},
				map[string]any{"fundId": f.fund, "amount": 5, "frequency": "monthly"}}}
		next := time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)
		for _, x := range body["recurringDonations"].([]any) {
			x.(map[string]any)["startDate"] = next
		}
		ids := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)["recurringDonationIds"].([]any)
		if len(ids) != 4 {
			t.Fatalf("schedules %v", ids)
		}
		c.Do(t, "POST", tPath(tn.ID, "/recurring-donations/", ids[3].(string), "/cancel"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
		// Only failed charges make a schedule past due: the fixture says so.
		withDB(t, c, func(conn *pgx.Conn) {
			if _, err := conn.Exec(context.Background(), `UPDATE orders.recurring_donations SET status = 'past_due' WHERE id = $1`, ids[2]); err != nil {
				t.Fatal(err)
			}
		})
		rec := read(month, tn.Key).Recurring
		// 20 monthly + 12 weekly × 52 / 12; the annual one is past due.
		if rec.ActiveSchedules != 2 || rec.MonthlyRecurringRevenue != 72 || rec.PastDue != 1 {
			t.Errorf("recurring %+v", rec)
		}
		recurringDonor = r
	})

	t.Run("portfolios", func(t *testing.T) {
		portfolios(t, c, tn, other.tn, map[string]float64{"a": a, "b": b, "c": cc, "r": recurringDonor})
	})

	t.Run("another tenant and the scope", func(t *testing.T) {
		o := read(tPath(other.tn.ID, "/dashboard?period=month&date=2025-03-10"), other.tn.Key)
		o.Raised.check(t, "other tenant's raised", "999", "0", "null")
		o.Donors.check(t, "other tenant's donors", "1", "0", "null")
		o.RetentionRate.check(t, "other tenant's retention", "null", "null", "null")
		c.Do(t, "GET", dash, other.tn.Key, nil).Expect(t, http.StatusNotFound)
		narrow := c.NewKey(t, tn.ID, "orders:view", "contacts:view")
		c.Do(t, "GET", dash, narrow, nil).Expect(t, http.StatusForbidden)
	})
}

// givingCalendar sets orders' copy of the tenant's calendar, rebuilding
// its period rows (docs/cohorts.md, "Local periods"); the copy counts as
// checked now, so the housekeeping leaves it for five minutes.
func givingCalendar(t *testing.T, c *apptest.Cluster, tenantID, zone string, fiscalYearStart int) {
	t.Helper()
	withDB(t, c, func(conn *pgx.Conn) {
		if _, err := conn.Exec(context.Background(), `SELECT orders.set_giving_calendar($1, $2, $3::smallint)`, tenantID, zone, fiscalYearStart); err != nil {
			t.Fatal(err)
		}
	})
}

// portfolios: assignment refused for a non-member and another tenant's
// user, a fundraiser's own dashboard through `me`, the work list, another
// user's needing users:manage, `me` with a key, and a letter run lowering
// the pending acknowledgements.
func portfolios(t *testing.T, c *apptest.Cluster, tn, other apptest.Tenant, who map[string]float64) {
	ctx := context.Background()
	signIn := func(tenant string) (string, string) {
		inv, err := c.Admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tenant, Email: staffEmail("fundraiser"), Role: "fundraiser"})
		if err != nil {
			t.Fatal(err)
		}
		apptest.RegisterSecret(inv.GetInvitationToken())
		return inv.GetUserId(), sessionOf(t, accept(t, c, inv.GetInvitationToken(), "violet hangar 42 tundra").Expect(t, http.StatusOK))
	}
	u, uSession := signIn(tn.ID)
	v, vSession := signIn(tn.ID)
	stranger, _ := signIn(other.ID)

	assign := func(contact float64, user any, status int) {
		t.Helper()
		path := tPath(tn.ID, fmt.Sprintf("/contacts/%d", int64(contact)))
		ct := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		ct["assignedUserId"] = user
		r := c.Do(t, "PUT", path, tn.Key, ct).Expect(t, status)
		if status == http.StatusBadRequest {
			if e := errorsOf(t, r); len(e["AssignedUserId"]) == 0 {
				t.Errorf("assigning %v: errors %v", user, e)
			}
		}
	}
	assign(who["a"], uuid.NewString(), http.StatusBadRequest)
	assign(who["a"], stranger, http.StatusBadRequest)
	assign(who["a"], "not-a-user", http.StatusBadRequest)
	for _, k := range []string{"a", "b", "c", "r"} {
		assign(who[k], u, http.StatusOK)
	}
	got := c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d", int64(who["c"]))), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["assignedUserId"] != u {
		t.Errorf("contact's assignedUserId %v, want %s", got["assignedUserId"], u)
	}
	// Cleared by a PUT without it, then set again.
	assign(who["c"], nil, http.StatusOK)
	if got := c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d", int64(who["c"]))), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["assignedUserId"] != nil {
		t.Errorf("cleared assignedUserId %v", got["assignedUserId"])
	}
	assign(who["c"], u, http.StatusOK)

	read := func(path, key, session string) dashboardDoc {
		t.Helper()
		var d dashboardDoc
		r := c.Do(t, "GET", path, key, nil, "Cookie", session)
		if session == "" {
			r = c.Do(t, "GET", path, key, nil)
		}
		r.Expect(t, http.StatusOK).JSON(t, &d)
		return d
	}
	q := "/dashboard?period=month&date=2025-03-10"
	mine := read(tPath(tn.ID, "/users/me", q), "", uSession)
	if mine.UserID != u {
		t.Errorf("userId %s, want %s", mine.UserID, u)
	}
	// A 150 and C 40 this March; A 100 and B 50 a year earlier.
	mine.Raised.check(t, "portfolio raised", "190", "150", "26.7")
	mine.Donors.check(t, "portfolio donors", "2", "2", "0")
	mine.NewDonors.check(t, "portfolio new donors", "1", "1", "0")
	mine.RetainedDonors.check(t, "portfolio retained", "1", "1", "0")
	// Pending: A's 4 gifts, B's 2, C's 1, R's 1. Lapsed (nothing in 18
	// months, whenever the test runs after 2026-10): A, B and C; R gave today.
	if mine.PendingAcknowledgements != 8 || mine.LapsedInPortfolio != 3 || mine.PastDueSchedules != 1 || mine.Recurring.ActiveSchedules != 2 {
		t.Errorf("work list: pending %v, lapsed %v, past due %v, active %v", mine.PendingAcknowledgements, mine.LapsedInPortfolio,
			mine.PastDueSchedules, mine.Recurring.ActiveSchedules)
	}
	byID := read(tPath(tn.ID, "/users/", u, q), tn.Key, "")
	byID.Raised.check(t, "read by an owner's key", "190", "150", "26.7")

	// Another fundraiser: their own (empty) portfolio, not u's.
	empty := read(tPath(tn.ID, "/users/me", q), "", vSession)
	empty.Raised.check(t, "empty portfolio", "0", "0", "null")
	if empty.UserID != v || empty.PendingAcknowledgements != 0 {
		t.Errorf("empty portfolio %+v", empty)
	}
	c.Do(t, "GET", tPath(tn.ID, "/users/", u, q), "", nil, "Cookie", vSession).Expect(t, http.StatusForbidden)
	c.Do(t, "GET", tPath(tn.ID, "/users/me", q), tn.Key, nil).Expect(t, http.StatusBadRequest)
	c.Do(t, "GET", tPath(tn.ID, "/users/", uuid.NewString(), q), tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(tn.ID, "/users/", stranger, q), tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(tn.ID, "/users/nobody", q), tn.Key, nil).Expect(t, http.StatusNotFound)

	// A letter run thanks March's gifts (A's two, C's); marking one of
	// A's by hand is the same to the count.
	var list struct {
		Items []map[string]any `json:"items"`
	}
	c.Do(t, "GET", tPath(tn.ID, "/document-templates?kind=acknowledgement"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	run := c.Do(t, "POST", tPath(tn.ID, "/letter-runs"), tn.Key, map[string]any{"templateId": list.Items[0]["id"], "channel": "pdf",
		"markAcknowledged": true, "filter": map[string]any{"from": "2025-03-01", "to": "2025-03-31"}}).Expect(t, http.StatusAccepted).Map(t)
	if done := awaitRun(t, c, tn, run["id"].(string)); done["status"] != "succeeded" {
		t.Fatalf("letter run %v", done)
	}
	if after := read(tPath(tn.ID, "/users/me", q), "", uSession); after.PendingAcknowledgements != 5 {
		t.Errorf("pending after the letter run %v, want 5", after.PendingAcknowledgements)
	}
}
