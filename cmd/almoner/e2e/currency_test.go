package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// TestDefaultCurrencyTravelsWithThePrincipal: a tenant whose default
// currency is JPY has an order, its recurring schedule and an item given
// without a currency recorded in yen, with amounts judged by the yen's
// decimals, from the currency the gateway asserts with the principal (the
// services keep no lookup of their own); a currency given wins.
func TestDefaultCurrencyTravelsWithThePrincipal(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	resp, err := c.Admin.CreateTenant(context.Background(), &authv1.CreateTenantRequest{
		Name: "Yen", Slug: "yen-" + strings.ToLower(uuid.NewString()[:8]), DefaultCurrency: "JPY"})
	if err != nil {
		t.Fatal(err)
	}
	tn := apptest.Tenant{ID: resp.GetTenant().GetId()}
	tn.Key = c.NewKey(t, tn.ID, "all")
	contact := createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Aiko", "lastName": "Donor"})["id"]
	fund := c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General"}).Expect(t, http.StatusCreated).Map(t)["id"]
	start := time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)
	order := func(amount any, extra ...string) *apptest.Response {
		body := map[string]any{"contactId": contact,
			"donations": []any{map[string]any{"fundId": fund, "amount": amount}},
			"payments":  []any{map[string]any{"paymentMethod": "Cash", "amount": amount}}}
		for i := 0; i+1 < len(extra); i += 2 {
			body[extra[i]] = extra[i+1]
		}
		return c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body)
	}

	body := map[string]any{"contactId": contact,
		"donations":          []any{map[string]any{"fundId": fund, "amount": 500}},
		"payments":           []any{map[string]any{"paymentMethod": "Cash", "amount": 500}},
		"recurringDonations": []any{map[string]any{"fundId": fund, "amount": 500, "frequency": "Monthly", "startDate": start}}}
	o := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated)
	m := o.Map(t)
	if m["currency"] != "JPY" || !strings.Contains(string(o.Body), `"totalAmount":500,`) {
		t.Errorf("order without a currency: %s", o.Body)
	}
	sid := m["recurringDonationIds"].([]any)[0].(string)
	if s := c.Do(t, "GET", tPath(tn.ID, "/recurring-donations/", sid), tn.Key, nil).Expect(t, http.StatusOK).Map(t); s["currency"] != "JPY" {
		t.Errorf("the schedule of a yen order: %v", s)
	}
	// The yen has no minor unit: 1.5 is not an amount in it.
	order(1.5).Expect(t, http.StatusBadRequest)
	if r := order(1.5, "currency", "USD").Expect(t, http.StatusCreated); r.Map(t)["currency"] != "USD" {
		t.Errorf("explicit currency: %s", r.Body)
	}
	if r := c.Do(t, "POST", invPath(tn.ID), tn.Key, `{"sku":"A","name":"A","price":500}`).Expect(t, http.StatusCreated); r.Map(t)["currency"] != "JPY" {
		t.Errorf("item without a currency: %s", r.Body)
	}
}
