package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

func TestRecurringDonations(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	body := f.cashOrder(20)
	start := time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)
	body["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 20, "frequency": "Monthly", "startDate": start}}
	o := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)
	ids := o["recurringDonationIds"].([]any)
	if len(ids) != 1 {
		t.Fatalf("recurringDonationIds = %v", o["recurringDonationIds"])
	}
	sid := ids[0].(string)
	r := c.Do(t, "GET", tPath(tn.ID, "/recurring-donations/", sid), tn.Key, nil).Expect(t, http.StatusOK)
	for _, frag := range []string{`"status":"active"`, `"frequency":"monthly"`, `"amount":20.00`, `"nextChargeDate":"` + start + `"`, `"originOrderId":"` + o["id"].(string) + `"`} {
		if !strings.Contains(string(r.Body), frag) {
			t.Errorf("schedule %s lacks %s", r.Body, frag)
		}
	}
	var page struct {
		Items      []map[string]any
		TotalCount int
	}
	c.Do(t, "GET", tPath(tn.ID, "/recurring-donations?status=active"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 1 {
		t.Errorf("active schedules = %d", page.TotalCount)
	}
	c.Do(t, "GET", tPath(tn.ID, "/recurring-donations?status=nope"), tn.Key, nil).Expect(t, http.StatusBadRequest)
	// Cancel twice: harmless.
	for range 2 {
		r = c.Do(t, "POST", tPath(tn.ID, "/recurring-donations/", sid, "/cancel"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
		if !strings.Contains(string(r.Body), `"status":"cancelled"`) || !strings.Contains(string(r.Body), `"nextChargeDate":""`) {
			t.Errorf("cancelled = %s", r.Body)
		}
	}
	c.Do(t, "GET", tPath(tn.ID, "/recurring-donations?status=active"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 0 {
		t.Errorf("active schedules after cancel = %d", page.TotalCount)
	}
	// Another tenant: 404; missing scope: 403; past start date: 400.
	other := c.NewTenant(t)
	c.Do(t, "GET", tPath(other.ID, "/recurring-donations/", sid), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", tPath(other.ID, "/recurring-donations/", sid, "/cancel"), other.Key, map[string]any{}).Expect(t, http.StatusNotFound)
	// Nor does it appear in the other tenant's list.
	var otherPage struct {
		TotalCount int
		Items      []map[string]any
	}
	c.Do(t, "GET", tPath(other.ID, "/recurring-donations"), other.Key, nil).Expect(t, http.StatusOK).JSON(t, &otherPage)
	if otherPage.TotalCount != 0 || len(otherPage.Items) != 0 {
		t.Errorf("another tenant lists %d schedules", otherPage.TotalCount)
	}
	c.Do(t, "GET", tPath(tn.ID, "/recurring-donations/", sid), c.NewKey(t, tn.ID, "orders:view"), nil).Expect(t, http.StatusForbidden)
	body["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 20, "frequency": "weekly", "startDate": "2020-01-01"}}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["RecurringDonations[0].StartDate"]) != 1 {
		t.Errorf("past start errors = %v", e)
	}
}
