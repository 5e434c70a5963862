package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/secretbox"
)

// TestRecurringRetriesThenNewMethod: with two runners, a card that
// declines off-session is tried on the default retry days (the day of the
// first decline, then 1, 3 and 7 days after it), the schedule becomes
// past_due, and giving it the contact's other saved card with PATCH makes
// it active and charges the missed installment exactly once.
func TestRecurringRetriesThenNewMethod(t *testing.T) {
	t.Parallel()
	// The runners' processes open the tenant's Stripe key: one sealing key.
	sealing := secretbox.NewKey()
	c, fake := stripeCluster(t, map[string]string{"ALMONER_ORDERS_RUNNER": "false", secretbox.KeyVar: sealing})
	runner := map[string]string{"ALMONER_STRIPE_API_BASE": fake.URL, "ALMONER_ORDERS_RUNNER_INTERVAL": "30ms", secretbox.KeyVar: sealing}
	for range 2 {
		apptest.Start(t, apptest.Options{DatabaseURL: c.DatabaseURL, Settings: runner})
	}
	st := newStripeTenant(t, c)
	g := &recurringRig{c: c, f: st.orderFixture, sentinel: newOrderFixture(t, c)}
	// The gift is paid by a Mastercard kept for later; the schedule by a
	// card that attaches but declines every later charge.
	b := st.cardOrder("Card", "pm_card_mastercard", 10)
	b["payments"].([]any)[0].(map[string]any)["savePaymentMethod"] = true
	b["recurringDonations"] = []any{map[string]any{"fundId": st.fund, "amount": 10, "frequency": "monthly",
		"paymentMethod": "Card", "paymentToken": "pm_card_chargeCustomerFail"}}
	sid := c.Do(t, "POST", tPath(st.tn.ID, "/orders"), st.tn.Key, b).Expect(t, http.StatusCreated).Map(t)["recurringDonationIds"].([]any)[0].(string)
	path := tPath(st.tn.ID, "/recurring-donations/", sid)
	g.exec(t, `UPDATE orders.recurring_donations SET next_charge_date = (now() AT TIME ZONE 'UTC')::date WHERE id = $1`, sid)

	day := func(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format(time.DateOnly) }
	// Attempts on the day, then 1, 3 and 7 days after the first decline.
	for i, wait := range []string{"", "1 day", "2 days", "4 days"} {
		if wait != "" {
			g.age(t, sid, wait)
		}
		g.pass(t)
		sc := c.Do(t, "GET", path, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		want := "active"
		if i == 3 {
			want = "past_due"
		}
		if sc["failedAttempts"] != float64(i+1) || sc["status"] != want || sc["failureReason"] != "generic_decline" {
			t.Fatalf("after attempt %d: %v", i+1, sc)
		}
		// The next try is announced, 1, 3 and 7 days after the first
		// decline (which is today after the moves of the clock).
		if wantRetry := map[int]string{0: day(1), 1: day(2), 2: day(4), 3: ""}[i]; sc["retryOn"] != wantRetry {
			t.Errorf("after attempt %d: retryOn %v, want %q", i+1, sc["retryOn"], wantRetry)
		}
		if i < 3 {
			// A pass on the same day tries nothing more.
			g.pass(t)
			if sc := c.Do(t, "GET", path, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t); sc["failedAttempts"] != float64(i+1) {
				t.Fatalf("attempt %d tried twice in a day: %v", i+1, sc)
			}
		}
	}
	ins := g.installments(t, st.orderFixture, sid)
	if len(ins) != 4 {
		t.Fatalf("installments after the retries = %v", ins)
	}
	for i, in := range ins {
		if in["status"] != "declined" || in["attempt"] != float64(4-i) || in["declineReason"] != "generic_decline" || in["orderId"] != "" {
			t.Errorf("installment %d = %v", i, in)
		}
	}

	// A new method: the contact's saved Mastercard.
	var methods []map[string]any
	c.Do(t, "GET", contactPath(st.tn.ID, int64(st.contactID))+"/payment-methods", st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &methods)
	mastercard := ""
	for _, m := range methods {
		if m["brand"] == "mastercard" {
			mastercard = m["id"].(string)
		}
	}
	if mastercard == "" {
		t.Fatalf("saved methods = %v", methods)
	}
	sc := c.Do(t, "PATCH", path, st.tn.Key, map[string]any{"paymentMethodId": mastercard}).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "active" || sc["failedAttempts"] != 0.0 || sc["failureReason"] != "" {
		t.Fatalf("after a new method = %v", sc)
	}
	g.pass(t)
	g.pass(t)
	charges := 0
	for _, q := range fake.Requests() {
		if q.Path == "/v1/payment_intents" && q.Metadata["schedule_id"] == sid && q.Status == http.StatusOK {
			charges++
		}
	}
	orders := g.installmentOrders(t, st.orderFixture, sid)
	if charges != 1 || len(orders) != 1 || orders[0]["totalAmount"] != 10.0 {
		t.Fatalf("%d succeeded charges, installment orders %v; want the missed installment charged once", charges, orders)
	}
	ins = g.installments(t, st.orderFixture, sid)
	if len(ins) != 5 || ins[0]["status"] != "charged" || ins[0]["attempt"] != 5.0 || ins[0]["orderId"] != orders[0]["id"] || ins[0]["period"] != ins[1]["period"] {
		t.Errorf("installments after the new method = %v", ins)
	}
	sc = c.Do(t, "GET", path, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "active" || sc["nextChargeDate"].(string) <= ins[0]["period"].(string) {
		t.Errorf("schedule after the missed installment = %v", sc)
	}
}
