package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/xuri/excelize/v2"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// cohortWorld is a tenant with hand-made donors (docs/cohorts.md).
type cohortWorld struct {
	t   *testing.T
	c   *apptest.Cluster
	f   orderFixture
	ny  *time.Location
	ids map[string]float64
}

func newCohortWorld(t *testing.T, c *apptest.Cluster) *cohortWorld {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	w := &cohortWorld{t: t, c: c, f: newOrderFixture(t, c), ny: ny, ids: map[string]float64{}}
	// The fixture's own contact (Jane) is not new this month.
	w.sql(`UPDATE contacts.contacts SET created_at = now() - interval '2 years' WHERE tenant_id = $1`, w.f.tn.ID)
	return w
}

// contact makes a contact named name; old ones are backdated two years,
// so only fresh ones are new this month.
func (w *cohortWorld) contact(name string, fresh bool, extra map[string]any) float64 {
	body := map[string]any{"contactType": "Individual", "firstName": name, "lastName": "Donor"}
	for k, v := range extra {
		body[k] = v
	}
	tn := w.f.tn
	id := w.c.Do(w.t, "POST", tPath(tn.ID, "/contacts"), tn.Key, body).Expect(w.t, http.StatusCreated).Map(w.t)["id"].(float64)
	if !fresh {
		w.sql(`UPDATE contacts.contacts SET created_at = now() - interval '2 years' WHERE tenant_id = $1 AND id = $2`, tn.ID, int64(id))
	}
	w.ids[name] = id
	return id
}

func (w *cohortWorld) sql(q string, args ...any) {
	w.t.Helper()
	conn, err := pgx.Connect(context.Background(), w.c.DatabaseURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), q, args...); err != nil {
		w.t.Fatal(err)
	}
}

// give records a cash gift of amount by contact, at (zero: now).
func (w *cohortWorld) give(contact, amount float64, at time.Time, extra map[string]any) string {
	w.t.Helper()
	b := w.f.cashOrder(amount)
	b["contactId"] = contact
	for k, v := range extra {
		b[k] = v
	}
	tn := w.f.tn
	id := w.c.Do(w.t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(w.t, http.StatusCreated).Map(w.t)["id"].(string)
	if !at.IsZero() {
		backdate(w.t, w.c, tn.ID, id, at.Format(time.RFC3339))
	}
	return id
}

// members reads a cohort's member names (first names), sorted.
func (w *cohortWorld) members(key, id string) []string {
	w.t.Helper()
	tn := w.f.tn
	var page struct {
		Items []struct {
			ContactID   float64 `json:"contactId"`
			DisplayName string  `json:"displayName"`
		} `json:"items"`
		TotalCount int `json:"totalCount"`
	}
	w.c.Do(w.t, "GET", tPath(tn.ID, "/cohorts/", id, "/members?pageSize=100&sort=-displayName"), key, nil).Expect(w.t, http.StatusOK).JSON(w.t, &page)
	var out []string
	for _, m := range page.Items {
		out = append(out, strings.TrimSuffix(m.DisplayName, " Donor"))
	}
	var n struct{ Count int }
	w.c.Do(w.t, "GET", tPath(tn.ID, "/cohorts/", id, "/count"), key, nil).Expect(w.t, http.StatusOK).JSON(w.t, &n)
	if n.Count != len(out) || page.TotalCount != len(out) {
		w.t.Errorf("cohort %s: count %d, totalCount %d, %d members", id, n.Count, page.TotalCount, len(out))
	}
	slices.Sort(out)
	return out
}

func (w *cohortWorld) expect(id string, want ...string) {
	w.t.Helper()
	slices.Sort(want)
	if got := w.members(w.f.tn.Key, id); !slices.Equal(got, want) {
		w.t.Errorf("cohort %s: members %q, want %q", id, got, want)
	}
}

// create saves a cohort and returns its id.
func (w *cohortWorld) create(name string, def any) string {
	w.t.Helper()
	tn := w.f.tn
	return w.c.Do(w.t, "POST", tPath(tn.ID, "/cohorts"), tn.Key, map[string]any{"name": name, "definition": def}).
		Expect(w.t, http.StatusCreated).Map(w.t)["id"].(string)
}

// TestCohorts runs the built-in cohorts on hand-made donors of a tenant
// whose fiscal year starts in January, custom cohorts with every
// operator, the refusals, references and cycles, refunds, voids and
// merges moving membership, the other tenant, scopes and exports.
func TestCohorts(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	w := newCohortWorld(t, c)
	tn := w.f.tn
	now := time.Now().In(w.ny)
	yearAgo, threeYears, twoYears := now.AddDate(-1, 0, 0), now.AddDate(-3, 0, 0), now.AddDate(-2, 0, 0)
	if now.Month() == time.January && now.Day() < 3 {
		t.Skip("the donors' dates straddle the new fiscal year's first days")
	}

	lyb := w.contact("Lyb", false, map[string]any{"tags": []string{"Gala"}, "addresses": []any{map[string]any{"addressType": "Home", "isPrimary": true, "line1": "1 Main St", "city": "Albany", "stateProvince": "NY", "postalCode": "12207", "country": "US"}}})
	w.give(lyb, 100, yearAgo, nil)
	sy := w.contact("Sy", false, nil)
	w.give(sy, 40, threeYears, nil)
	ret := w.contact("Ret", false, nil)
	w.give(ret, 30, yearAgo, nil)
	w.give(ret, 50, time.Time{}, nil)
	first := w.contact("First", false, map[string]any{"communicationPreferences": map[string]any{"doNotEmail": true}})
	firstGift := w.give(first, 20, time.Time{}, nil)
	major := w.contact("Major", false, map[string]any{"contactType": "Organization", "organizationName": "Major"})
	majorGift := w.give(major, 1500, time.Time{}, nil)
	w.give(major, 10, twoYears, nil)
	monthly := w.contact("Monthly", false, nil)
	w.give(monthly, 10, time.Time{}, map[string]any{"recurringDonations": []any{map[string]any{"fundId": w.f.fund, "amount": 10, "frequency": "Monthly",
		"startDate": time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)}}})
	fresh := w.contact("Fresh", true, nil)
	w.contact("None", false, nil)

	// Another tenant's donors are never counted.
	other := newCohortWorld(t, c)
	o := other.contact("Foreign", false, nil)
	other.give(o, 5000, yearAgo, nil)

	t.Run("built-in cohorts", func(t *testing.T) {
		w.t, other.t = t, t
		w.expect("lybunt", "Lyb")
		w.expect("sybunt", "Sy")
		w.expect("first-time-donors", "First", "Monthly")
		w.expect("lapsed", "Sy")
		w.expect("major-donors", "Major")
		w.expect("monthly-donors", "Monthly")
		w.expect("new-this-month", "Fresh")
		var list struct {
			Items []struct {
				ID      string
				BuiltIn bool
			}
		}
		c.Do(t, "GET", tPath(tn.ID, "/cohorts"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
		if len(list.Items) != 7 || !list.Items[0].BuiltIn {
			t.Errorf("list = %+v", list.Items)
		}
		c.Do(t, "PUT", tPath(tn.ID, "/cohorts/lybunt"), tn.Key, map[string]any{"name": "x", "definition": map[string]any{"cohort": "sybunt"}}).Expect(t, http.StatusBadRequest)
		c.Do(t, "DELETE", tPath(tn.ID, "/cohorts/lybunt"), tn.Key, nil).Expect(t, http.StatusBadRequest)
	})

	t.Run("every operator", func(t *testing.T) {
		w.t, other.t = t, t
		w.t = t
		fund := w.f.fund
		win := map[string]any{"from": yearAgo.Format(time.DateOnly), "to": now.Format(time.DateOnly)}
		cases := []struct {
			def  map[string]any
			want []string
		}{
			{cond("contactType", "=", "Organization"), []string{"Major"}},
			{cond("contactType", "!=", "Individual"), []string{"Major"}},
			{cond("contactType", "in", []any{"Organization"}), []string{"Major"}},
			{cond("tags", "=", "gala"), []string{"Lyb"}},
			{cond("tags", "contains", "GALA"), []string{"Lyb"}},
			{cond("tags", "in", []any{"x", "Gala"}), []string{"Lyb"}},
			{cond("tags", "isNull", false), []string{"Lyb"}},
			{all(cond("tags", "!=", "gala"), cond("giftCount", ">", 0)), []string{"Sy", "Ret", "First", "Major", "Monthly"}},
			{cond("address.state", "=", "ny"), []string{"Lyb"}},
			{cond("address.state", "in", []any{"NJ", "ny"}), []string{"Lyb"}},
			{cond("address.postalCode", "contains", "220"), []string{"Lyb"}},
			{all(cond("address.postalCode", "isNull", true), cond("giftCount", ">=", 1), cond("address.state", "!=", "NY")), []string{"Sy", "Ret", "First", "Major", "Monthly"}},
			{cond("createdAt", ">=", now.AddDate(0, 0, -1).Format(time.DateOnly)), []string{"Fresh"}},
			{cond("createdAt", "between", []any{"2000-01-01", now.AddDate(-1, 0, 0).Format(time.DateOnly)}), []string{"Lyb", "Sy", "Ret", "First", "Major", "Monthly", "None", "Jane"}},
			{cond("doNotEmail", "=", true), []string{"First"}},
			{all(cond("doNotEmail", "!=", true), cond("giftCount", "=", 0)), []string{"Fresh", "None", "Jane"}},
			{cond("totalGiven", ">", 1000), []string{"Major"}},
			{cond("totalGiven", "between", []any{"40", 80}), []string{"Sy", "Ret"}},
			{cond("totalGiven", "<", 15), []string{"Fresh", "None", "Jane", "Monthly"}},
			{cond("totalGiven", "<=", 20), []string{"Fresh", "None", "Jane", "Monthly", "First"}},
			{cond("giftCount", "=", 2), []string{"Ret", "Major"}},
			{cond("giftCount", "!=", 0), []string{"Lyb", "Sy", "Ret", "First", "Major", "Monthly"}},
			{cond("largestGift", ">=", 100), []string{"Lyb", "Major"}},
			{cond("largestGift", "isNull", true), []string{"Fresh", "None", "Jane"}},
			{cond("firstGiftDate", "<", now.AddDate(-2, 0, 1).Format(time.DateOnly)), []string{"Sy", "Major"}},
			{cond("lastGiftDate", "isNull", false), []string{"Lyb", "Sy", "Ret", "First", "Major", "Monthly"}},
			{cond("lastGiftDate", ">", now.AddDate(0, 0, -1).Format(time.DateOnly)), []string{"Ret", "First", "Major", "Monthly"}},
			{with(cond("totalGiven", ">=", 30), "window", win), []string{"Lyb", "Ret", "Major"}},
			{with(cond("giftCount", ">=", 1), "fiscalYear", -1), []string{"Lyb", "Ret"}},
			{with(with(cond("totalGiven", ">", 0), "fundIds", []any{fund}), "fiscalYear", 0), []string{"Ret", "First", "Major", "Monthly"}},
			{with(cond("totalGiven", ">", 0), "fundIds", []any{w.f.plainFund}), nil},
			{cond("hasActiveRecurring", "=", true), []string{"Monthly"}},
			{with(cond("hasActiveRecurring", "!=", false), "frequency", "weekly"), nil},
			{cond("recurringStatus", "=", "active"), []string{"Monthly"}},
			{cond("recurringStatus", "in", []any{"paused", "active"}), []string{"Monthly"}},
			{all(cond("recurringStatus", "!=", "active"), cond("recurringStatus", "isNull", false)), nil},
			{map[string]any{"any": []any{map[string]any{"cohort": "lybunt"}, map[string]any{"not": cond("giftCount", ">=", 0)}}}, []string{"Lyb"}},
		}
		for i, k := range cases {
			id := w.create(fmt.Sprintf("op %d", i), k.def)
			w.expect(id, k.want...)
			c.Do(t, "DELETE", tPath(tn.ID, "/cohorts/", id), tn.Key, nil).Expect(t, http.StatusNoContent)
		}
	})

	t.Run("refusals name the bad node", func(t *testing.T) {
		w.t, other.t = t, t
		cases := []struct {
			def        any
			path, code string
		}{
			{all(cond("tags", "=", "a"), cond("giftCount", ">", 1), cond("giftCount", "~", 1)), "definition.all[2].op", "Definition.InvalidOperator"},
			{map[string]any{"not": cond("shoeSize", "=", 1)}, "definition.not.field", "Definition.UnknownField"},
			{cond("createdAt", "<", "yesterday"), "definition.value", "Definition.InvalidValue"},
			{map[string]any{"all": []any{}}, "definition.all", "Definition.Malformed"},
			{map[string]any{"cohort": "00000000-0000-0000-0000-000000000001"}, "definition.cohort", "Definition.UnknownCohort"},
		}
		for _, k := range cases {
			p := expectProblem(t, c.Do(t, "POST", tPath(tn.ID, "/cohorts"), tn.Key, map[string]any{"name": "bad", "definition": k.def}), http.StatusBadRequest)
			if msgs := p.Errors[k.path]; len(msgs) != 1 || !strings.HasPrefix(msgs[0], k.code+": ") {
				t.Errorf("%v: errors %v, want %s at %s", k.def, p.Errors, k.code, k.path)
			}
		}
		deep := cond("giftCount", ">", 1)
		for range 8 {
			deep = map[string]any{"not": deep}
		}
		p := expectProblem(t, c.Do(t, "POST", tPath(tn.ID, "/cohorts"), tn.Key, map[string]any{"name": "deep", "definition": deep}), http.StatusBadRequest)
		if _, ok := p.Errors["definition.not.not.not.not.not.not.not.not"]; !ok {
			t.Errorf("too deep: %v", p.Errors)
		}
	})

	t.Run("references and cycles", func(t *testing.T) {
		w.t, other.t = t, t
		a := w.create("A", map[string]any{"cohort": "lybunt"})
		b := w.create("B", map[string]any{"any": []any{map[string]any{"cohort": a}, cond("giftCount", "=", 0)}})
		w.t = t
		w.expect(b, "Lyb", "Fresh", "None", "Jane")
		p := expectProblem(t, c.Do(t, "PUT", tPath(tn.ID, "/cohorts/", a), tn.Key, map[string]any{"name": "A", "definition": map[string]any{"not": map[string]any{"cohort": b}}}), http.StatusBadRequest)
		if msgs := p.Errors["definition.any[0].cohort"]; len(msgs) != 1 || !strings.HasPrefix(msgs[0], "Definition.Cycle: ") {
			t.Errorf("cycle: %v", p.Errors)
		}
		p = expectProblem(t, c.Do(t, "PUT", tPath(tn.ID, "/cohorts/", a), tn.Key, map[string]any{"name": "A", "definition": map[string]any{"cohort": a}}), http.StatusBadRequest)
		if msgs := p.Errors["definition.cohort"]; len(msgs) != 1 || !strings.HasPrefix(msgs[0], "Definition.Cycle: ") {
			t.Errorf("self: %v", p.Errors)
		}
		expectProblem(t, c.Do(t, "DELETE", tPath(tn.ID, "/cohorts/", a), tn.Key, nil), http.StatusBadRequest)
		c.Do(t, "DELETE", tPath(tn.ID, "/cohorts/", b), tn.Key, nil).Expect(t, http.StatusNoContent)
		c.Do(t, "DELETE", tPath(tn.ID, "/cohorts/", a), tn.Key, nil).Expect(t, http.StatusNoContent)
		c.Do(t, "GET", tPath(tn.ID, "/cohorts/", a), tn.Key, nil).Expect(t, http.StatusNotFound)
	})

	t.Run("tenants and scopes", func(t *testing.T) {
		w.t, other.t = t, t
		otn := other.f.tn
		theirs := other.create("Theirs", map[string]any{"cohort": "lybunt"})
		expectProblem(t, c.Do(t, "GET", tPath(tn.ID, "/cohorts/", theirs), tn.Key, nil), http.StatusNotFound)
		expectProblem(t, c.Do(t, "GET", tPath(tn.ID, "/cohorts/", theirs, "/count"), tn.Key, nil), http.StatusNotFound)
		expectProblem(t, c.Do(t, "PUT", tPath(tn.ID, "/cohorts/", theirs), tn.Key, map[string]any{"name": "x", "definition": map[string]any{"cohort": "lybunt"}}), http.StatusNotFound)
		expectProblem(t, c.Do(t, "POST", tPath(tn.ID, "/cohorts"), tn.Key, map[string]any{"name": "x", "definition": map[string]any{"cohort": theirs}}), http.StatusBadRequest)
		expectProblem(t, c.Do(t, "GET", tPath(otn.ID, "/cohorts/lybunt/count"), tn.Key, nil), http.StatusNotFound)
		other.t = t
		other.expect("lybunt", "Foreign")
		viewer := c.NewKey(t, tn.ID, "contacts:view")
		manager := c.NewKey(t, tn.ID, "cohorts:manage")
		exporter := c.NewKey(t, tn.ID, "reports:export")
		body := map[string]any{"name": "scoped", "definition": map[string]any{"cohort": "lybunt"}}
		for _, k := range []struct {
			key, method, path, scope string
			body                     any
		}{
			{viewer, "POST", "/cohorts", "cohorts:manage", body},
			{viewer, "PUT", "/cohorts/" + theirs, "cohorts:manage", body},
			{viewer, "DELETE", "/cohorts/" + theirs, "cohorts:manage", nil},
			{manager, "GET", "/cohorts/lybunt/members", "contacts:view", nil},
			{manager, "GET", "/cohorts/lybunt/count", "contacts:view", nil},
			{viewer, "POST", "/cohorts/lybunt/export?format=csv", "reports:export", nil},
			{exporter, "GET", "/cohorts", "cohorts:manage", nil},
		} {
			p := expectProblem(t, c.Do(t, k.method, tPath(tn.ID, k.path), k.key, k.body), http.StatusForbidden)
			if p.Title != "Missing required permission: "+k.scope {
				t.Errorf("%s %s: %q", k.method, k.path, p.Title)
			}
		}
		w.t = t
		if got := w.members(viewer, "lybunt"); !slices.Equal(got, []string{"Lyb"}) {
			t.Errorf("viewer reads lybunt: %q", got)
		}
		c.Do(t, "GET", tPath(tn.ID, "/cohorts/lybunt"), manager, nil).Expect(t, http.StatusOK)
	})

	t.Run("contacts filtered by a cohort", func(t *testing.T) {
		w.t, other.t = t, t
		var page struct {
			Items []struct {
				ID        float64
				FirstName string
			}
			TotalCount    int
			NextPageToken string
		}
		c.Do(t, "GET", tPath(tn.ID, "/contacts?cohortId=first-time-donors&pageSize=1"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
		if page.TotalCount != 2 || len(page.Items) != 1 || page.Items[0].FirstName != "First" || page.NextPageToken == "" {
			t.Fatalf("first page = %+v", page)
		}
		c.Do(t, "GET", tPath(tn.ID, "/contacts?cohortId=first-time-donors&pageSize=1&pageToken="+page.NextPageToken), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
		if page.TotalCount != 2 || len(page.Items) != 1 || page.Items[0].FirstName != "Monthly" || page.NextPageToken != "" {
			t.Errorf("second page = %+v", page)
		}
		c.Do(t, "GET", tPath(tn.ID, "/contacts?cohortId=first-time-donors&pageSize=1&page=2"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
		if len(page.Items) != 1 || page.Items[0].FirstName != "Monthly" {
			t.Errorf("page 2 = %+v", page)
		}
		p := expectProblem(t, c.Do(t, "GET", tPath(tn.ID, "/contacts?cohortId=lybunt&tag=x"), tn.Key, nil), http.StatusBadRequest)
		if _, ok := p.Errors["CohortId"]; !ok {
			t.Errorf("combined filters: %v", p.Errors)
		}
		expectProblem(t, c.Do(t, "GET", tPath(tn.ID, "/contacts?cohortId=00000000-0000-0000-0000-000000000001"), tn.Key, nil), http.StatusNotFound)
	})

	t.Run("export", func(t *testing.T) {
		w.t, other.t = t, t
		formula := w.contact("=HYPERLINK(\"x\")", false, nil)
		w.give(formula, 100, yearAgo, nil)
		r := c.Do(t, "POST", tPath(tn.ID, "/cohorts/lybunt/export?format=csv"), tn.Key, nil).Expect(t, http.StatusOK)
		rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || rows[0][0] != "Contact ID" || rows[1][1] != "Lyb Donor" || rows[1][3] != "100.00" || rows[2][1] != `'=HYPERLINK("x") Donor` {
			t.Errorf("csv = %q", rows)
		}
		x := c.Do(t, "POST", tPath(tn.ID, "/cohorts/lybunt/export?format=xlsx"), tn.Key, nil).Expect(t, http.StatusOK)
		f, err := excelize.OpenReader(bytes.NewReader(x.Body))
		if err != nil {
			t.Fatal(err)
		}
		xrows, err := f.GetRows("Sheet1")
		if err != nil {
			t.Fatal(err)
		}
		if len(xrows) != 3 || xrows[2][1] != `=HYPERLINK("x") Donor` {
			t.Errorf("xlsx = %q", xrows)
		}
		if formula, _ := f.GetCellFormula("Sheet1", "B3"); formula != "" {
			t.Errorf("xlsx made a formula: %q", formula)
		}
		expectProblem(t, c.Do(t, "POST", tPath(tn.ID, "/cohorts/lybunt/export?format=pdf"), tn.Key, nil), http.StatusBadRequest)
		c.Do(t, "POST", mergePath(tn.ID, lyb), tn.Key, map[string]any{"duplicateId": formula}).Expect(t, http.StatusOK)
	})

	t.Run("report parameter cohortId", func(t *testing.T) {
		var run reportRun
		params := map[string]any{"parameters": map[string]any{"From": now.AddDate(0, 0, -1).Format(time.DateOnly), "To": now.AddDate(0, 0, 1).Format(time.DateOnly)}}
		c.Do(t, "POST", tPath(tn.ID, "/reports/types/top-donors/run"), tn.Key, params).Expect(t, http.StatusOK).JSON(t, &run)
		if run.TotalCount != 4 {
			t.Errorf("top donors of today: %d rows, want 4", run.TotalCount)
		}
		params["parameters"].(map[string]any)["CohortId"] = "major-donors"
		c.Do(t, "POST", tPath(tn.ID, "/reports/types/top-donors/run"), tn.Key, params).Expect(t, http.StatusOK).JSON(t, &run)
		if run.TotalCount != 1 || string(run.Rows[0]["ContactId"]) != fmt.Sprint(major) {
			t.Errorf("top major donors: %+v", run.Rows)
		}
		params["parameters"].(map[string]any)["CohortId"] = "nope"
		expectProblem(t, c.Do(t, "POST", tPath(tn.ID, "/reports/types/top-donors/run"), tn.Key, params), http.StatusNotFound)
	})

	t.Run("letter run by cohort", func(t *testing.T) {
		w.t, other.t = t, t
		c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
		var list struct {
			Items []map[string]any `json:"items"`
		}
		c.Do(t, "GET", tPath(tn.ID, "/document-templates?kind=acknowledgement"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
		today := now.Format(time.DateOnly)
		body := map[string]any{"templateId": list.Items[0]["id"], "channel": "pdf", "markAcknowledged": false,
			"filter": map[string]any{"from": today, "to": today, "cohortId": "major-donors"}}
		r := c.Do(t, "POST", tPath(tn.ID, "/letter-runs"), tn.Key, body).Expect(t, http.StatusAccepted).Map(t)
		if f := r["filter"].(map[string]any); f["cohortId"] != "major-donors" {
			t.Errorf("run filter %v", f)
		}
		run := awaitRun(t, c, tn, r["id"].(string))
		if run["status"] != "succeeded" || run["letters"] != float64(1) {
			t.Errorf("run = %v, want 1 letter (Major's gift of today)", run)
		}
		body["filter"].(map[string]any)["cohortId"] = "nope"
		e := errorsOf(t, c.Do(t, "POST", tPath(tn.ID, "/letter-runs"), tn.Key, body).Expect(t, http.StatusBadRequest))
		if len(e["Filter.CohortId"]) == 0 {
			t.Errorf("errors %v", e)
		}
	})

	t.Run("refunds, voids and merges move membership", func(t *testing.T) {
		w.t, other.t = t, t
		w.t = t
		c.Do(t, "POST", tPath(tn.ID, "/orders/", majorGift, "/refunds"), tn.Key, map[string]any{"amount": 600}).Expect(t, http.StatusCreated)
		w.expect("major-donors")
		c.Do(t, "POST", tPath(tn.ID, "/orders/", firstGift, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
		w.expect("first-time-donors", "Monthly")
		c.Do(t, "POST", mergePath(tn.ID, fresh), tn.Key, map[string]any{"duplicateId": lyb}).Expect(t, http.StatusOK)
		w.expect("lybunt", "Fresh")
		w.expect("new-this-month", "Fresh")
		w.give(fresh, 5, time.Time{}, nil)
		w.expect("lybunt")
		other.expect("lybunt", "Foreign")
	})
}

// TestCohortsJulyFiscalYear runs the fiscal-year built-ins for a tenant
// whose fiscal year starts in July (its settings' fiscalYearStartMonth).
func TestCohortsJulyFiscalYear(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	w := newCohortWorld(t, c)
	c.Do(t, "PUT", tPath(w.f.tn.ID, "/settings"), w.f.tn.Key, map[string]any{"fiscalYearStartMonth": 7}).Expect(t, http.StatusOK)
	now := time.Now().In(w.ny)
	y := now.Year()
	if now.Month() < time.July {
		y--
	}
	fy0 := time.Date(y, time.July, 1, 12, 0, 0, 0, w.ny)
	if now.Sub(fy0) < 48*time.Hour {
		t.Skip("today is the new fiscal year's first day")
	}
	// Last fiscal year's last month (this calendar year when today is
	// after July): lybunt under a July year.
	late := w.contact("Late", false, nil)
	w.give(late, 25, fy0.AddDate(0, -1, 0), nil)
	// 00:30 on July 1 in New York: this fiscal year's first gift.
	edge := w.contact("Edge", false, nil)
	w.give(edge, 25, time.Date(y, time.July, 1, 0, 30, 0, 0, w.ny), nil)
	// Late June 30 in New York is July 1 in UTC: still last fiscal year.
	eve := w.contact("Eve", false, nil)
	w.give(eve, 25, time.Date(y, time.June, 30, 23, 30, 0, 0, w.ny), nil)
	w.give(eve, 25, fy0.AddDate(-2, 0, 0), nil)
	old := w.contact("Old", false, nil)
	w.give(old, 25, fy0.AddDate(-2, 1, 0), nil)
	w.expect("lybunt", "Late", "Eve")
	w.expect("first-time-donors", "Edge")
	w.expect("sybunt", "Old")
	id := w.create("June 30 in New York", with(cond("giftCount", "=", 1), "window", map[string]any{"from": fmt.Sprintf("%d-06-30", y), "to": fmt.Sprintf("%d-06-30", y)}))
	w.expect(id, "Eve")
}

func cond(field, op string, value any) map[string]any {
	return map[string]any{"field": field, "op": op, "value": value}
}

func all(nodes ...map[string]any) map[string]any {
	list := make([]any, len(nodes))
	for i, n := range nodes {
		list[i] = n
	}
	return map[string]any{"all": list}
}

func with(n map[string]any, k string, v any) map[string]any {
	n[k] = v
	return n
}
