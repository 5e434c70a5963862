package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentPartialRefunds: eight refunds of 10.00 sent at once
// against a 50.00 card gift give back exactly 50.00 at Stripe and in the
// order: five are taken, three refused as over the refundable amount, and
// no refund reaches Stripe without being recorded (the order's row lock
// orders them).
func TestConcurrentPartialRefunds(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	o := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 50)).Expect(t, http.StatusCreated).Map(t)
	id, pi := o["id"].(string), paymentOf(t, o)["processorReference"].(string)

	codes := make([]int, 8)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i] = c.Do(t, "POST", orders+"/"+id+"/refunds", st.tn.Key, map[string]any{"amount": 10}).Status
		})
	}
	wg.Wait()
	taken := 0
	for _, code := range codes {
		switch code {
		case http.StatusCreated:
			taken++
		case http.StatusBadRequest:
		default:
			t.Errorf("a concurrent refund answered %d", code)
		}
	}
	var atStripe int64
	for _, r := range fake.Refunds(pi) {
		atStripe += r.Amount
	}
	got := c.Do(t, "GET", orders+"/"+id, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if taken != 5 || atStripe != 5000 || got["refundedAmount"] != 50.0 || got["orderStatus"] != "Refunded" {
		t.Errorf("%d refunds taken, %d refunded at Stripe, order %v %v; want 5, 5000, 50, Refunded", taken, atStripe, got["refundedAmount"], got["orderStatus"])
	}
}

// TestVoidAfterRefundAndRefundOfPendingDebit: a void after a refund
// (partial or whole) and a refund of a bank debit still processing are
// refused before Stripe is asked, and change nothing; a void of the
// processing debit cancels it.
func TestVoidAfterRefundAndRefundOfPendingDebit(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	partial := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 30)).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	c.Do(t, "POST", orders+"/"+partial+"/refunds", st.tn.Key, map[string]any{"amount": 10}).Expect(t, http.StatusCreated)
	whole := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 20)).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	c.Do(t, "POST", orders+"/"+whole+"/refunds", st.tn.Key, map[string]any{}).Expect(t, http.StatusCreated)
	debit := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Ach", "pm_usBankAccount", 40)).Expect(t, http.StatusCreated).Map(t)
	if debit["orderStatus"] != "Pending" {
		t.Fatalf("bank debit order = %v, want Pending", debit["orderStatus"])
	}
	debitID := debit["id"].(string)

	for _, tc := range []struct {
		name, path, code string
		body             map[string]any
	}{
		{"void after a partial refund", orders + "/" + partial + "/void", "Order.CannotVoid", map[string]any{}},
		{"void after a whole refund", orders + "/" + whole + "/void", "Order.CannotVoid", map[string]any{}},
		{"refund of a processing debit", orders + "/" + debitID + "/refunds", "Order.CannotRefund", map[string]any{"amount": 5}},
		{"whole refund of a processing debit", orders + "/" + debitID + "/refunds", "Order.CannotRefund", map[string]any{}},
	} {
		calls, rows := len(fake.Requests()), tenantAuditRows(t, c, st.tn.ID)
		e := errorsOf(t, c.Do(t, "POST", tc.path, st.tn.Key, tc.body).Expect(t, http.StatusBadRequest))
		if len(e[""]) != 1 || !strings.HasPrefix(e[""][0], tc.code) {
			t.Errorf("%s: errors %v, want %s", tc.name, e, tc.code)
		}
		if n := len(fake.Requests()) - calls; n != 0 {
			t.Errorf("%s: %d requests to Stripe, want 0", tc.name, n)
		}
		if n := tenantAuditRows(t, c, st.tn.ID) - rows; n != 0 {
			t.Errorf("%s: %d audit rows, want 0", tc.name, n)
		}
	}
	v := c.Do(t, "POST", orders+"/"+debitID+"/void", st.tn.Key, map[string]any{}).Expect(t, http.StatusOK).Map(t)
	if p, _ := fake.PaymentIntent(paymentOf(t, debit)["processorReference"].(string)); v["orderStatus"] != "Voided" || p.Status != "canceled" {
		t.Errorf("void of a processing debit: order %v, PaymentIntent %s; want Voided, canceled", v["orderStatus"], p.Status)
	}
}

// TestMalformedMandateAcceptance: mandateAcceptance of the wrong shape,
// with unknown members, an address with a zone or a mask, or a browser
// past 1,000 characters is a 400 naming it; nothing is charged or
// recorded.
func TestMalformedMandateAcceptance(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	path := tPath(st.tn.ID, "/orders")
	with := func(mandate any) map[string]any {
		b := st.cardOrder("Ach", "pm_usBankAccount", 40)
		b["payments"].([]any)[0].(map[string]any)["mandateAcceptance"] = mandate
		return b
	}
	before, calls := orderCount(t, c, st.tn), len(fake.Requests())
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"a string", with("203.0.113.7")},
		{"an array", with([]any{"203.0.113.7", "Mozilla/5.0"})},
		{"an address as a number", with(map[string]any{"ipAddress": 3405803783, "userAgent": "Mozilla/5.0"})},
		{"an unknown member", with(map[string]any{"ipAddress": "203.0.113.7", "userAgent": "Mozilla/5.0", "acceptedAt": "now"})},
		{"an address with a zone", with(map[string]any{"ipAddress": "fe80::1%eth0", "userAgent": "Mozilla/5.0"})},
		{"an address with a mask", with(map[string]any{"ipAddress": "203.0.113.7/24", "userAgent": "Mozilla/5.0"})},
		{"a browser past 1,000 characters", with(map[string]any{"ipAddress": "203.0.113.7", "userAgent": strings.Repeat("M", 1001)})},
	} {
		r := c.Do(t, "POST", path, st.tn.Key, tc.body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400; body %s", tc.name, r.Status, r.Body)
			continue
		}
		expectProblem(t, r, http.StatusBadRequest)
		if !strings.Contains(strings.ToLower(string(r.Body)), "mandateacceptance") {
			t.Errorf("%s: the problem does not name mandateAcceptance: %s", tc.name, r.Body)
		}
	}
	if n := orderCount(t, c, st.tn); n != before {
		t.Errorf("%d orders after the refusals, want %d", n, before)
	}
	if n := len(fake.Requests()); n != calls {
		t.Errorf("%d requests to Stripe after the refusals, want %d", n-calls, 0)
	}
}
