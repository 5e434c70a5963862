package e2e

import (
	"net/http"
	"testing"
)

// TestAchMandateAcceptanceRelayed: a server relaying a donor's bank-debit
// form names the donor's acceptance of the mandate (mandateAcceptance),
// and Stripe is sent the donor's address and browser, not the relaying
// server's; the property is refused on other methods and when malformed,
// before anything is charged or recorded.
func TestAchMandateAcceptanceRelayed(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	path := tPath(st.tn.ID, "/orders")
	relayed := func(method, token string, mandate map[string]any) map[string]any {
		b := st.cardOrder(method, token, 40)
		b["payments"].([]any)[0].(map[string]any)["mandateAcceptance"] = mandate
		return b
	}

	for _, tc := range []struct{ ip, wantIP string }{
		{"203.0.113.7", "203.0.113.7"},
		{" 2001:DB8::1 ", "2001:db8::1"},
	} {
		o := c.Do(t, "POST", path, st.tn.Key,
			relayed("Ach", "pm_usBankAccount", map[string]any{"ipAddress": tc.ip, "userAgent": "Mozilla/5.0 (the donor's browser)"}),
			"User-Agent", "form-server/1.0").Expect(t, http.StatusCreated).Map(t)
		reqs := chargesOf(fake, o["id"].(string))
		if len(reqs) != 1 {
			t.Fatalf("%d charges for the relayed debit, want 1", len(reqs))
		}
		f := reqs[0].Form
		if got := f.Get("mandate_data[customer_acceptance][online][ip_address]"); got != tc.wantIP {
			t.Errorf("mandate ip_address = %q, want the donor's %q", got, tc.wantIP)
		}
		if got := f.Get("mandate_data[customer_acceptance][online][user_agent]"); got != "Mozilla/5.0 (the donor's browser)" {
			t.Errorf("mandate user_agent = %q, want the donor's", got)
		}
		if got := f.Get("mandate_data[customer_acceptance][type]"); got != "online" {
			t.Errorf("mandate type = %q", got)
		}
	}

	before, charges := orderCount(t, c, st.tn), len(fake.Requests())
	for _, bc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"a card has no mandate", relayed("Card", "pm_card_visa", map[string]any{"ipAddress": "203.0.113.7", "userAgent": "Mozilla/5.0"}), "Payments[0].MandateAcceptance"},
		{"not an address", relayed("Ach", "pm_usBankAccount", map[string]any{"ipAddress": "203.0.113", "userAgent": "Mozilla/5.0"}), "Payments[0].MandateAcceptance.IpAddress"},
		{"no address", relayed("Ach", "pm_usBankAccount", map[string]any{"userAgent": "Mozilla/5.0"}), "Payments[0].MandateAcceptance.IpAddress"},
		{"no browser", relayed("Ach", "pm_usBankAccount", map[string]any{"ipAddress": "203.0.113.7", "userAgent": "  "}), "Payments[0].MandateAcceptance.UserAgent"},
	} {
		e := errorsOf(t, c.Do(t, "POST", path, st.tn.Key, bc.body).Expect(t, http.StatusBadRequest))
		if len(e[bc.field]) != 1 {
			t.Errorf("%s: errors %v, want one under %s", bc.name, e, bc.field)
		}
	}
	if n := orderCount(t, c, st.tn); n != before {
		t.Errorf("%d orders after the refusals, want %d", n, before)
	}
	if n := len(fake.Requests()); n != charges {
		t.Errorf("%d requests to Stripe after the refusals, want %d", n, charges)
	}
}
