package stripefake_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
)

const (
	keyA   = "sk_test_tenantA"
	keyB   = "sk_test_tenantB"
	whsecA = "whsec_tenantA"
)

func start(t *testing.T) (*stripefake.Server, processor.Processor) {
	t.Helper()
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	return fake, stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: keyA})
}

func card(key, pm string) processor.ChargeRequest {
	return processor.ChargeRequest{IdempotencyKey: key, AmountMinor: 2500, Currency: "USD", PaymentMethodID: pm,
		Metadata: map[string]string{"tenant_id": "tA", "order_id": "o-" + key}}
}

func bank(key string) processor.ChargeRequest {
	return processor.ChargeRequest{IdempotencyKey: key, AmountMinor: 10000, Currency: "usd", PaymentMethodID: "pm_usBankAccount_success",
		PaymentMethodType: "us_bank_account", DonorIPAddress: "203.0.113.7", DonorUserAgent: "Mozilla/5.0"}
}

func TestChargeOutcomes(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	cus, err := p.CreateCustomer(ctx, processor.CustomerRequest{IdempotencyKey: "cus-1", Name: "Jane Donor"})
	if err != nil {
		t.Fatal(err)
	}
	offSession := func(pm string) processor.ChargeRequest {
		r := card("off-"+pm, pm)
		r.CustomerID, r.OffSession = cus, true
		return r
	}
	tests := []struct {
		name        string
		req         processor.ChargeRequest
		outcome     processor.Outcome
		declineCode string
		status      string
	}{
		{"visa", card("k-visa", "pm_card_visa"), processor.Succeeded, "", "succeeded"},
		{"mastercard", card("k-mc", "pm_card_mastercard"), processor.Succeeded, "", "succeeded"},
		{"declined", card("k-declined", "pm_card_chargeDeclined"), processor.Declined, "generic_decline", "requires_payment_method"},
		{"insufficient funds", card("k-funds", "pm_card_chargeDeclinedInsufficientFunds"), processor.Declined, "insufficient_funds", "requires_payment_method"},
		{"3-D Secure on session", card("k-3ds", "pm_card_authenticationRequired"), processor.RequiresAction, "", "requires_action"},
		{"3-D Secure off session", offSession("pm_card_authenticationRequired"), processor.Declined, "authentication_required", "requires_payment_method"},
		{"bank debit", bank("k-bank"), processor.Processing, "", "processing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := p.Charge(ctx, tc.req)
			if err != nil {
				t.Fatalf("err %v", err)
			}
			if res.Outcome != tc.outcome || res.DeclineCode != tc.declineCode {
				t.Errorf("got %v %q, want %v %q", res.Outcome, res.DeclineCode, tc.outcome, tc.declineCode)
			}
			if tc.outcome == processor.Declined && res.Message == "" {
				t.Error("a decline without a message")
			}
			if (tc.outcome == processor.RequiresAction) != (res.ClientSecret != "") {
				t.Errorf("client secret %q for %v", res.ClientSecret, res.Outcome)
			}
			pi, ok := fake.PaymentIntent(res.Reference)
			if !ok || pi.Status != tc.status || pi.Amount != 2500 && pi.Amount != 10000 {
				t.Errorf("PaymentIntent %+v (found %v), want status %s", pi, ok, tc.status)
			}
		})
	}
	t.Run("unknown payment method", func(t *testing.T) {
		_, err := p.Charge(ctx, card("k-unknown", "pm_nobody"))
		r, ok := processor.AsRefused(err)
		if !ok || r.Code != "resource_missing" || r.Param != "payment_method" {
			t.Errorf("err %v, want RefusedError resource_missing on payment_method", err)
		}
	})
}

func TestRequestsRecorded(t *testing.T) {
	fake, p := start(t)
	if _, err := p.Charge(context.Background(), card("order-7/0", "pm_card_visa")); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/payment_intents" || r.SecretKey != keyA || r.IdempotencyKey != "order-7/0" ||
		r.Amount != 2500 || r.Currency != "usd" || r.PaymentMethod != "pm_card_visa" || r.Metadata["order_id"] != "o-order-7/0" ||
		r.Status != 200 || r.Replay || r.StripeVersion == "" {
		t.Errorf("request %+v", r)
	}
}

func TestIdempotency(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	first, err := p.Charge(ctx, card("same", "pm_card_visa"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Charge(ctx, card("same", "pm_card_visa"))
	if err != nil || again != first {
		t.Errorf("replay got %+v, %v; want %+v", again, err, first)
	}
	if n := len(fake.PaymentIntents()); n != 1 {
		t.Errorf("%d PaymentIntents, want 1", n)
	}
	if reqs := fake.Requests(); !reqs[1].Replay || reqs[0].Replay {
		t.Errorf("replay flags %v %v, want false true", reqs[0].Replay, reqs[1].Replay)
	}
	// A decline is stored too: the retry is the same decline.
	d1, _ := p.Charge(ctx, card("declined", "pm_card_chargeDeclined"))
	d2, _ := p.Charge(ctx, card("declined", "pm_card_chargeDeclined"))
	if d1 != d2 || d1.Outcome != processor.Declined {
		t.Errorf("declines %+v and %+v, want the same decline", d1, d2)
	}
	other := card("same", "pm_card_visa")
	other.AmountMinor = 9900
	_, err = p.Charge(ctx, other)
	if r, ok := processor.AsRefused(err); !ok || r.Code != "idempotency_error" {
		t.Errorf("key reused with another amount: err %v, want RefusedError idempotency_error", err)
	}
	// Each account has its own keys.
	pB := stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: keyB})
	b, err := pB.Charge(ctx, card("same", "pm_card_visa"))
	if err != nil || b.Reference == first.Reference {
		t.Errorf("tenant B with tenant A's key: %+v, %v; want a charge of its own", b, err)
	}
}

func TestAccountsAreSeparate(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	res, err := p.Charge(ctx, card("k", "pm_card_visa"))
	if err != nil {
		t.Fatal(err)
	}
	pB := stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: keyB})
	_, err = pB.Refund(ctx, processor.RefundRequest{IdempotencyKey: "r", Reference: res.Reference, AmountMinor: 100})
	if r, ok := processor.AsRefused(err); !ok || r.Code != "resource_missing" {
		t.Errorf("refund with another account's key: err %v, want resource_missing", err)
	}
	fake.RevokeKey(keyB)
	_, err = pB.CreateCustomer(ctx, processor.CustomerRequest{IdempotencyKey: "c"})
	if r, ok := processor.AsRefused(err); !ok || r.Code != "authentication_failed" {
		t.Errorf("revoked key: err %v, want authentication_failed", err)
	}
}

func TestRefunds(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	res, err := p.Charge(ctx, card("k", "pm_card_visa"))
	if err != nil {
		t.Fatal(err)
	}
	refund := func(key string, amount int64) (processor.Refund, error) {
		return p.Refund(ctx, processor.RefundRequest{IdempotencyKey: key, Reference: res.Reference, AmountMinor: amount, Metadata: map[string]string{"refund_id": key}})
	}
	r1, err := refund("r1", 1000)
	if err != nil || r1.Pending || !strings.HasPrefix(r1.ID, "re_") {
		t.Fatalf("refund %+v, %v", r1, err)
	}
	if _, err := refund("r2", 2000); !refusedWith(err, "amount_too_large") {
		t.Errorf("refund of more than is left: err %v", err)
	}
	ev, err := fake.DashboardRefund(res.Reference, 500)
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, ev)
	if got.Kind != processor.EventChargeRefunded || got.Reference != res.Reference || got.AmountRefundedMinor != 1500 {
		t.Errorf("dashboard refund event %+v, want charge.refunded of 1500 so far", got)
	}
	if _, err := refund("r3", 1000); err != nil {
		t.Errorf("refund of the rest: %v", err)
	}
	if _, err := refund("r4", 1); !refusedWith(err, "charge_already_refunded") {
		t.Errorf("refund of a refunded charge: err %v", err)
	}
	if pi, _ := fake.PaymentIntent(res.Reference); pi.AmountRefunded != 2500 {
		t.Errorf("refunded %d, want 2500", pi.AmountRefunded)
	}
	if rs := fake.Refunds(res.Reference); len(rs) != 3 || !rs[1].Dashboard || rs[0].Metadata["refund_id"] != "r1" {
		t.Errorf("refunds %+v", rs)
	}

	bankRes, err := p.Charge(ctx, bank("b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "rb0", Reference: bankRes.Reference, AmountMinor: 100}); !refusedWith(err, "payment_intent_unexpected_state") {
		t.Errorf("refund of a processing debit: err %v", err)
	}
	if _, err := fake.Settle(bankRes.Reference); err != nil {
		t.Fatal(err)
	}
	if r, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "rb", Reference: bankRes.Reference, AmountMinor: 100}); err != nil || !r.Pending {
		t.Errorf("bank refund %+v, %v; want pending", r, err)
	}

	fake.RefuseRefunds(true)
	if _, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "rb2", Reference: bankRes.Reference, AmountMinor: 100}); !refusedWith(err, "charge_not_refundable") {
		t.Errorf("refused refunds: err %v", err)
	}
	fake.RefuseRefunds(false)
	// A refusal is not stored: the same key runs again.
	if _, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "rb2", Reference: bankRes.Reference, AmountMinor: 100}); err != nil {
		t.Errorf("refund after refusals stopped: %v", err)
	}
}

func refusedWith(err error, code string) bool {
	r, ok := processor.AsRefused(err)
	return ok && r.Code == code
}

// parse verifies and reduces an event as the orders service will.
func parse(t *testing.T, ev stripefake.Event) processor.Event {
	t.Helper()
	body, sig := ev.Sign(whsecA)
	got, err := stripeproc.ParseEvent(body, sig, whsecA)
	if err != nil {
		t.Fatalf("ParseEvent(%s): %v", ev.Type, err)
	}
	if got.ID != ev.ID || got.Type != ev.Type {
		t.Errorf("event %s %s parsed as %s %s", ev.ID, ev.Type, got.ID, got.Type)
	}
	return got
}

func TestNotifications(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)

	settled, _ := p.Charge(ctx, bank("settles"))
	ev, err := fake.Settle(settled.Reference)
	if err != nil {
		t.Fatal(err)
	}
	if got := parse(t, ev); got.Kind != processor.EventPaymentSucceeded || got.Reference != settled.Reference {
		t.Errorf("settle: %+v", got)
	}

	failed, _ := p.Charge(ctx, bank("fails"))
	ev, err = fake.Fail(failed.Reference, "account_closed")
	if err != nil {
		t.Fatal(err)
	}
	if got := parse(t, ev); got.Kind != processor.EventPaymentFailed || got.FailureCode != "account_closed" || got.FailureMessage == "" {
		t.Errorf("fail: %+v", got)
	}

	authed, _ := p.Charge(ctx, card("3ds", "pm_card_authenticationRequired"))
	if _, err := fake.Settle(authed.Reference); err != nil {
		t.Errorf("settle after authentication: %v", err)
	}

	abandoned, _ := p.Charge(ctx, bank("abandoned"))
	ev, err = fake.DashboardCancel(abandoned.Reference)
	if err != nil {
		t.Fatal(err)
	}
	if got := parse(t, ev); got.Kind != processor.EventPaymentCanceled || got.Reference != abandoned.Reference {
		t.Errorf("dashboard cancel: %+v", got)
	}

	paid, _ := p.Charge(ctx, card("disputed", "pm_card_visa"))
	ev, err = fake.Dispute(paid.Reference)
	if err != nil {
		t.Fatal(err)
	}
	got := parse(t, ev)
	if got.Kind != processor.EventDisputeCreated || got.Reference != paid.Reference || !strings.HasPrefix(got.DisputeID, "dp_") {
		t.Errorf("dispute: %+v", got)
	}
	if _, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "rd", Reference: paid.Reference, AmountMinor: 100}); !refusedWith(err, "charge_disputed") {
		t.Errorf("refund of a disputed charge: err %v", err)
	}

	// Requests make events too: the declined charge's payment_failed.
	declined, _ := p.Charge(ctx, card("declined", "pm_card_chargeDeclinedInsufficientFunds"))
	var found bool
	for _, e := range fake.Events() {
		if e.PaymentIntent == declined.Reference && e.Type == "payment_intent.payment_failed" {
			found = true
			if got := parse(t, e); got.FailureCode != "insufficient_funds" {
				t.Errorf("decline event %+v", got)
			}
		}
	}
	if !found {
		t.Error("no payment_intent.payment_failed for the declined charge")
	}

	// An account pinned to an older API version.
	ev.APIVersion = "2020-08-27"
	if got := parse(t, ev); got.Kind != processor.EventDisputeCreated {
		t.Errorf("older version: %+v", got)
	}
	body, sig := ev.SignAt(whsecA, time.Now().Add(-10*time.Minute))
	if _, err := stripeproc.ParseEvent(body, sig, whsecA); err == nil {
		t.Error("stale signature accepted")
	}
}

func TestSendAndRedeliver(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	var mu sync.Mutex
	var ids []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := stripeproc.ParseEvent(body, r.Header.Get("Stripe-Signature"), whsecA)
		if err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		mu.Lock()
		ids = append(ids, ev.ID)
		mu.Unlock()
	}))
	defer receiver.Close()

	res, _ := p.Charge(ctx, bank("k"))
	ev, err := fake.Settle(res.Reference)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if status, err := ev.Send(ctx, receiver.URL, whsecA); err != nil || status != http.StatusOK {
			t.Fatalf("send: %d, %v", status, err)
		}
	}
	if status, _ := ev.Send(ctx, receiver.URL, "whsec_wrong"); status != http.StatusBadRequest {
		t.Errorf("wrong secret: receiver answered %d", status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != ev.ID || ids[1] != ev.ID {
		t.Errorf("received %v, want %s twice", ids, ev.ID)
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	res, _ := p.Charge(ctx, bank("k"))
	if err := p.Cancel(ctx, res.Reference, "cancel-1"); err != nil {
		t.Fatal(err)
	}
	if pi, _ := fake.PaymentIntent(res.Reference); pi.Status != "canceled" {
		t.Errorf("status %s, want canceled", pi.Status)
	}
	// Canceled already, with a new key: still success.
	if err := p.Cancel(ctx, res.Reference, "cancel-2"); err != nil {
		t.Errorf("second cancel: %v", err)
	}
	paid, _ := p.Charge(ctx, card("paid", "pm_card_visa"))
	if err := p.Cancel(ctx, paid.Reference, "cancel-3"); !refusedWith(err, "payment_intent_unexpected_state") {
		t.Errorf("cancel of a succeeded charge: err %v", err)
	}
}

func TestCustomersAndMethods(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)
	cus, err := p.CreateCustomer(ctx, processor.CustomerRequest{IdempotencyKey: "c1", Name: "Jane Donor", Email: "jane@example.org", Metadata: map[string]string{"contact_id": "42"}})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := p.CreateCustomer(ctx, processor.CustomerRequest{IdempotencyKey: "c1", Name: "Jane Donor", Email: "jane@example.org", Metadata: map[string]string{"contact_id": "42"}})
	if again != cus {
		t.Errorf("replayed customer %s, want %s", again, cus)
	}
	pm, err := p.AttachPaymentMethod(ctx, "pm_card_visa", cus, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if pm.ID == "pm_card_visa" || pm.Type != "card" || pm.Brand != "visa" || pm.Last4 != "4242" || pm.ExpYear == 0 || pm.CustomerID != cus {
		t.Errorf("attached %+v, want a clone of the test visa", pm)
	}
	bankPM, err := p.AttachPaymentMethod(ctx, "pm_usBankAccount", cus, "a2")
	if err != nil || bankPM.Type != "us_bank_account" || bankPM.Brand != "STRIPE TEST BANK" || bankPM.Last4 != "6789" {
		t.Errorf("attached %+v, %v", bankPM, err)
	}
	if c, _ := fake.Customer(cus); len(c.PaymentMethods) != 2 || c.Metadata["contact_id"] != "42" {
		t.Errorf("customer %+v", c)
	}

	// The saved card, off session; and without its customer it is refused.
	r := card("i1", pm.ID)
	r.CustomerID, r.OffSession = cus, true
	if res, err := p.Charge(ctx, r); err != nil || res.Outcome != processor.Succeeded {
		t.Errorf("off-session charge %+v, %v", res, err)
	}
	if _, err := p.Charge(ctx, card("i2", pm.ID)); err == nil {
		t.Error("a customer's method charged without the customer")
	}

	if _, err := p.AttachPaymentMethod(ctx, "pm_card_chargeDeclined", cus, "a3"); !refusedWith(err, "card_declined") {
		t.Errorf("attach of a declining card: err %v", err)
	}
	failing, err := p.AttachPaymentMethod(ctx, "pm_card_chargeCustomerFail", cus, "a4")
	if err != nil {
		t.Fatal(err)
	}
	r = card("i3", failing.ID)
	r.CustomerID, r.OffSession = cus, true
	if res, err := p.Charge(ctx, r); err != nil || res.Outcome != processor.Declined {
		t.Errorf("saved failing card: %+v, %v", res, err)
	}

	if err := p.DetachPaymentMethod(ctx, pm.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.DetachPaymentMethod(ctx, pm.ID); err != nil {
		t.Errorf("second detach: %v", err)
	}
	if err := p.DetachPaymentMethod(ctx, "pm_nobody"); !refusedWith(err, "resource_missing") {
		t.Errorf("detach of an unknown method: err %v", err)
	}

	// A card saved during an on-session payment is attached after it.
	save := card("s1", "pm_card_mastercard")
	save.CustomerID, save.SaveForFutureUse = cus, true
	if _, err := p.Charge(ctx, save); err != nil {
		t.Fatal(err)
	}
	// visa (detached), bank, customer-fail, and now mastercard.
	if c, _ := fake.Customer(cus); len(c.PaymentMethods) != 3 {
		t.Errorf("customer has %d methods after a saving charge, want 3", len(c.PaymentMethods))
	}
}

func TestFailureInjection(t *testing.T) {
	ctx := context.Background()
	fake, p := start(t)

	fake.FailNext(1, 0)
	if _, err := p.Charge(ctx, card("k1", "pm_card_visa")); !processor.IsUnavailable(err) {
		t.Errorf("injected 500: err %v", err)
	}
	if n := len(fake.PaymentIntents()); n != 0 {
		t.Errorf("%d PaymentIntents after a failure, want none", n)
	}
	if res, err := p.Charge(ctx, card("k1", "pm_card_visa")); err != nil || res.Outcome != processor.Succeeded {
		t.Errorf("retry: %+v, %v", res, err)
	}
	for _, status := range []int{429, 409, 503} {
		fake.FailNext(1, status)
		if _, err := p.Refund(ctx, processor.RefundRequest{IdempotencyKey: "r", Reference: "pi_x", AmountMinor: 1}); !processor.IsUnavailable(err) {
			t.Errorf("injected %d: err %v", status, err)
		}
	}

	// The charge happens, its answer is lost; the retry with the same
	// key gets the stored answer and charges nothing more.
	fake.LoseNextResponses(1)
	if _, err := p.Charge(ctx, card("k2", "pm_card_visa")); !processor.IsUnavailable(err) {
		t.Errorf("lost answer: err %v", err)
	}
	res, err := p.Charge(ctx, card("k2", "pm_card_visa"))
	if err != nil || res.Outcome != processor.Succeeded {
		t.Errorf("retry after a lost answer: %+v, %v", res, err)
	}
	if n := len(fake.PaymentIntents()); n != 2 {
		t.Errorf("%d PaymentIntents, want 2", n)
	}
	reqs := fake.Requests()
	if last := reqs[len(reqs)-1]; !last.Replay || !reqs[len(reqs)-2].Lost {
		t.Errorf("last two requests %+v %+v, want lost then replayed", reqs[len(reqs)-2], last)
	}

	fake.Close()
	if _, err := p.Charge(ctx, card("k3", "pm_card_visa")); !processor.IsUnavailable(err) {
		t.Errorf("closed server: err %v", err)
	}
}

// TestUnknownParameter: the fake refuses what Stripe would not take.
func TestUnknownParameter(t *testing.T) {
	fake, _ := start(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, fake.URL+"/v1/customers", strings.NewReader(url.Values{"nickname": {"x"}}.Encode()))
	req.Header.Set("Authorization", "Bearer "+keyA)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(body), "parameter_unknown") {
		t.Errorf("got %d %s", res.StatusCode, body)
	}
}

// TestNotInTheBinaries: the fake is test support; no binary that ships
// may link it (a fake Stripe answering real charges would be silent).
func TestNotInTheBinaries(t *testing.T) {
	const fake = "github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
	binaries := []string{"github.com/almoner/almoner/cmd/almoner"}
	out, err := exec.CommandContext(t.Context(), "go", append([]string{"list", "-e", "-deps"}, binaries...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found only %v", deps)
	}
	for _, d := range deps {
		if d == fake {
			t.Errorf("%s is linked into %v", fake, binaries)
		}
	}
}
