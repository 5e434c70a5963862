package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/traceid"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
)

// stripeTenant is a tenant whose own Stripe account is the fake's.
type stripeTenant struct {
	orderFixture
	slug, secretKey, webhookSecret string
}

// stripeCluster starts a cluster whose Stripe API base is a fresh fake.
func stripeCluster(t *testing.T, settings map[string]string) (*apptest.Cluster, *stripefake.Server) {
	t.Helper()
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	s := map[string]string{"ALMONER_STRIPE_API_BASE": fake.URL}
	for k, v := range settings {
		s[k] = v
	}
	return apptest.Start(t, apptest.Options{Settings: s}), fake
}

// newStripeTenant makes a tenant with the processor feature, a contact, a
// fund and an item, and connects its own (fake) Stripe account.
func newStripeTenant(t *testing.T, c *apptest.Cluster) stripeTenant {
	t.Helper()
	f := newOrderFixture(t, c, "api-access:enabled", "payment-processor:enabled")
	st := stripeTenant{orderFixture: f, secretKey: "sk_test_" + traceid.New()[:24], webhookSecret: "whsec_" + traceid.New()}
	if p := c.SetProcessor(t, f.tn.ID, st.secretKey, st.webhookSecret); !p.GetConfigured() || p.GetMode() != "test" {
		t.Fatalf("processor = %v", p)
	}
	tn, err := c.Admin.GetTenant(context.Background(), &authv1.GetTenantRequest{TenantId: f.tn.ID})
	if err != nil {
		t.Fatal(err)
	}
	st.slug = tn.GetTenant().GetSlug()
	return st
}

// cardOrder is a donation of amount paid by one Card (or Ach) payment.
func (st stripeTenant) cardOrder(method, token string, amount float64) map[string]any {
	b := st.cashOrder(amount)
	b["payments"] = []any{map[string]any{"paymentMethod": method, "amount": amount, "paymentToken": token}}
	return b
}

func (st stripeTenant) notify(t *testing.T, c *apptest.Cluster, ev stripefake.Event) int {
	t.Helper()
	code, err := ev.Send(context.Background(), c.URL+"/api/webhooks/stripe/"+st.slug, st.webhookSecret)
	if err != nil {
		t.Fatalf("send %s: %v", ev.Type, err)
	}
	return code
}

func paymentOf(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	ps, _ := o["payments"].([]any)
	if len(ps) != 1 {
		t.Fatalf("order payments = %v", o["payments"])
	}
	return ps[0].(map[string]any)
}

// chargesOf returns the fake's PaymentIntent creations for one order.
func chargesOf(fake *stripefake.Server, orderID string) []stripefake.Request {
	var out []stripefake.Request
	for _, r := range fake.Requests() {
		if r.Method == "POST" && r.Path == "/v1/payment_intents" && r.Metadata["order_id"] == orderID {
			out = append(out, r)
		}
	}
	return out
}

func auditCount(t *testing.T, c *apptest.Cluster, tenantID, entityID string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_id = $2`, tenantID, entityID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStripeChargeOutcomes charges through the tenant's own Stripe account
// for each outcome Stripe's test mode gives, and checks what Stripe was
// asked: amount, currency, the tenant's key, the idempotency key and the
// metadata.
func TestStripeChargeOutcomes(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	other := newStripeTenant(t, c)
	path := tPath(st.tn.ID, "/orders")

	// Succeeded: Completed and Captured, the PaymentIntent as reference.
	o := c.Do(t, "POST", path, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 25)).Expect(t, http.StatusCreated).Map(t)
	pay := paymentOf(t, o)
	if o["orderStatus"] != "Completed" || pay["paymentStatus"] != "Captured" || !strings.HasPrefix(fmt.Sprint(pay["processorReference"]), "pi_") {
		t.Errorf("card order = %v", o)
	}
	reqs := chargesOf(fake, o["id"].(string))
	if len(reqs) != 1 {
		t.Fatalf("%d charges for the order, want 1", len(reqs))
	}
	r := reqs[0]
	wantMeta := map[string]string{"tenant_id": st.tn.ID, "order_id": o["id"].(string), "order_number": fmt.Sprint(o["orderNumber"]), "payment_id": pay["id"].(string)}
	for k, v := range wantMeta {
		if r.Metadata[k] != v {
			t.Errorf("metadata[%s] = %q, want %q", k, r.Metadata[k], v)
		}
	}
	if r.Amount != 2500 || r.Currency != "usd" || r.SecretKey != st.secretKey || r.IdempotencyKey != o["id"].(string)+"/0" || r.PaymentMethod != "pm_card_visa" {
		t.Errorf("charge request = %+v", r)
	}

	// Another tenant's charge goes to its own account with its own key.
	o2 := c.Do(t, "POST", tPath(other.tn.ID, "/orders"), other.tn.Key, other.cardOrder("Card", "pm_card_visa", 7)).Expect(t, http.StatusCreated).Map(t)
	if reqs := chargesOf(fake, o2["id"].(string)); len(reqs) != 1 || reqs[0].SecretKey != other.secretKey || reqs[0].Amount != 700 {
		t.Errorf("other tenant's charge = %+v", reqs)
	}

	// Declined: 400 under "" with the processor's reason; nothing recorded.
	before := orderCount(t, c, st.tn)
	resp := c.Do(t, "POST", path, st.tn.Key, st.cardOrder("Card", "pm_card_chargeDeclined", 25)).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, resp); len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Payment.DeclinedByProcessor") || !strings.Contains(e[""][0], "declined") {
		t.Errorf("decline errors = %v", e)
	}
	if n := orderCount(t, c, st.tn); n != before {
		t.Errorf("%d orders after a decline, want %d", n, before)
	}

	// 3-D Secure: Pending, RequiresAction, with what Stripe.js needs.
	o = c.Do(t, "POST", path, st.tn.Key, st.cardOrder("Card", "pm_card_authenticationRequired", 30)).Expect(t, http.StatusCreated).Map(t)
	pay = paymentOf(t, o)
	na, _ := pay["nextAction"].(map[string]any)
	if o["orderStatus"] != "Pending" || pay["paymentStatus"] != "RequiresAction" || na["type"] != "use_stripe_sdk" || !strings.Contains(fmt.Sprint(na["clientSecret"]), "_secret_") {
		t.Errorf("3-D Secure order = %v", o)
	}
	// The donor authenticates; Stripe's notification completes the order.
	ev, err := fake.Settle(pay["processorReference"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if code := st.notify(t, c, ev); code != http.StatusOK {
		t.Fatalf("notification answered %d", code)
	}
	got := c.Do(t, "GET", path+"/"+o["id"].(string), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["orderStatus"] != "Completed" || paymentOf(t, got)["paymentStatus"] != "Captured" || paymentOf(t, got)["nextAction"] != nil {
		t.Errorf("after authentication = %v", got)
	}

	// Bank debit: Pending until it settles days later; it counts nowhere.
	ach := c.Do(t, "POST", path, st.tn.Key, st.cardOrder("Ach", "pm_usBankAccount", 40), "User-Agent", "Mozilla/5.0 (donation form)").
		Expect(t, http.StatusCreated).Map(t)
	if ach["orderStatus"] != "Pending" || paymentOf(t, ach)["paymentStatus"] != "Pending" {
		t.Errorf("bank debit order = %v", ach)
	}
	if reqs := chargesOf(fake, ach["id"].(string)); len(reqs) != 1 || reqs[0].Form.Get("mandate_data[customer_acceptance][online][user_agent]") != "Mozilla/5.0 (donation form)" {
		t.Errorf("bank debit request = %+v", reqs)
	}
	lifetime := func() any {
		var d struct{ GivingTotals []map[string]any }
		c.Do(t, "GET", contactPath(st.tn.ID, int64(st.contactID))+"/dashboard", st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &d)
		if len(d.GivingTotals) != 1 {
			t.Fatalf("giving totals = %v", d.GivingTotals)
		}
		return d.GivingTotals[0]["lifetimeTotal"]
	}
	if v := lifetime(); v != 55.0 {
		t.Errorf("lifetime total with a pending debit = %v, want 55 (25 + 30)", v)
	}
	ev, err = fake.Settle(paymentOf(t, ach)["processorReference"].(string))
	if err != nil {
		t.Fatal(err)
	}
	audits := auditCount(t, c, st.tn.ID, ach["id"].(string))
	if code := st.notify(t, c, ev); code != http.StatusOK {
		t.Fatalf("settle notification answered %d", code)
	}
	if got := c.Do(t, "GET", path+"/"+ach["id"].(string), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["orderStatus"] != "Completed" {
		t.Errorf("settled debit = %v", got)
	}
	if n := auditCount(t, c, st.tn.ID, ach["id"].(string)); n != audits+1 {
		t.Errorf("order audit rows %d after settling, want %d (order.updated)", n, audits+1)
	}
	// Redelivered: 200, nothing changes.
	if code := st.notify(t, c, ev); code != http.StatusOK {
		t.Errorf("redelivered notification answered %d", code)
	}
	if n := auditCount(t, c, st.tn.ID, ach["id"].(string)); n != audits+1 {
		t.Errorf("order audit rows %d after a redelivery, want %d", n, audits+1)
	}
	if v := lifetime(); v != 95.0 {
		t.Errorf("lifetime total after settling = %v, want 95", v)
	}
}

// TestStripeFailedDebitReleasesStock: a bank debit that fails makes its
// order Failed and gives its stock back.
func TestStripeFailedDebitReleasesStock(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	body := map[string]any{"contactId": st.contactID, "currency": "USD",
		"items":    []any{map[string]any{"itemId": st.item, "quantity": 2}},
		"payments": []any{map[string]any{"paymentMethod": "Ach", "amount": 50, "paymentToken": "pm_usBankAccount"}}}
	o := c.Do(t, "POST", tPath(st.tn.ID, "/orders"), st.tn.Key, body).Expect(t, http.StatusCreated).Map(t)
	if o["orderStatus"] != "Pending" {
		t.Fatalf("order = %v", o)
	}
	stock := func() float64 {
		return c.Do(t, "GET", tPath(st.tn.ID, "/inventory/", st.item), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)["stockOnHand"].(float64)
	}
	if s := stock(); s != 8 {
		t.Fatalf("stock after the order = %v, want 8", s)
	}
	ev, err := fake.Fail(paymentOf(t, o)["processorReference"].(string), "")
	if err != nil {
		t.Fatal(err)
	}
	if code := st.notify(t, c, ev); code != http.StatusOK {
		t.Fatalf("failure notification answered %d", code)
	}
	got := c.Do(t, "GET", tPath(st.tn.ID, "/orders/", o["id"].(string)), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["orderStatus"] != "Failed" || paymentOf(t, got)["paymentStatus"] != "Failed" {
		t.Errorf("failed debit = %v", got)
	}
	if s := stock(); s != 10 {
		t.Errorf("stock after the debit failed = %v, want 10", s)
	}
}

// TestStripeNotificationsRefused: a notification that cannot be verified
// changes nothing and tells nothing.
func TestStripeNotificationsRefused(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	o := c.Do(t, "POST", tPath(st.tn.ID, "/orders"), st.tn.Key, st.cardOrder("Ach", "pm_usBankAccount", 10)).Expect(t, http.StatusCreated).Map(t)
	ev, err := fake.Settle(paymentOf(t, o)["processorReference"].(string))
	if err != nil {
		t.Fatal(err)
	}
	send := func(slug, secret string, tamper func([]byte) []byte, sigOverride *string) *apptest.Response {
		body, sig := ev.Sign(secret)
		if tamper != nil {
			body = tamper(body)
		}
		if sigOverride != nil {
			sig = *sigOverride
		}
		headers := []string{"Content-Type", "application/json"}
		if sig != "" {
			headers = append(headers, "Stripe-Signature", sig)
		}
		return c.Do(t, "POST", "/api/webhooks/stripe/"+slug, "", body, headers...)
	}
	empty := ""
	cases := map[string]*apptest.Response{
		"wrong secret":   send(st.slug, "whsec_wrong", nil, nil),
		"no signature":   send(st.slug, st.webhookSecret, nil, &empty),
		"tampered body":  send(st.slug, st.webhookSecret, func(b []byte) []byte { return []byte(strings.Replace(string(b), "succeeded", "succeeded ", 1)) }, nil),
		"unknown slug":   send("no-such-tenant", st.webhookSecret, nil, nil),
		"garbage header": send(st.slug, st.webhookSecret, nil, ptr("t=1,v1=00")),
	}
	var first string
	for name, r := range cases {
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, r.Status)
		}
		p := r.Map(t)
		delete(p, "traceId")
		delete(p, "instance")
		if s := fmt.Sprint(p); first == "" {
			first = s
		} else if s != first {
			t.Errorf("%s: body %s differs from %s", name, s, first)
		}
	}
	got := c.Do(t, "GET", tPath(st.tn.ID, "/orders/", o["id"].(string)), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["orderStatus"] != "Pending" {
		t.Errorf("order after refused notifications = %v", got["orderStatus"])
	}
	// The four refusals that name the tenant are counted for the
	// operations log (the unknown slug names none), in one row of the hour.
	if n := refusedNotifications(t, c, st.tn.ID, "bad_signature"); n != 4 {
		t.Errorf("refused notifications counted %d, want 4", n)
	}
	// An event for a charge the tenant does not know: 200, logged.
	stranger, err := fake.Settle(chargeOutsideAlmoner(t, fake, st.secretKey))
	if err != nil {
		t.Fatal(err)
	}
	if code := st.notify(t, c, stranger); code != http.StatusOK {
		t.Errorf("unknown charge's notification answered %d", code)
	}
	if !strings.Contains(c.Logs.String(), "processor event for an unknown charge") {
		t.Error("the unknown charge's event was not logged")
	}
	// Signed, but stale (older than Stripe's five-minute tolerance): 400.
	if r := send(st.slug, st.webhookSecret, nil, ptr(staleSignature(ev, st.webhookSecret))); r.Status != http.StatusBadRequest {
		t.Errorf("stale notification answered %d", r.Status)
	}
	// Signed by the tenant's account but lacking what its type needs: 200
	// (Stripe would send it again for days), logged, nothing changed.
	incomplete := stripefake.Event{ID: "evt_incomplete_" + traceid.New()[:8], Type: "payment_intent.succeeded", APIVersion: "2020-08-27",
		Created: time.Now(), Object: []byte(`{"object":"payment_intent","status":"succeeded"}`)}
	if code := st.notify(t, c, incomplete); code != http.StatusOK {
		t.Errorf("incomplete event answered %d", code)
	}
	if !strings.Contains(c.Logs.String(), "processor event cannot be applied") {
		t.Error("the incomplete event was not logged")
	}
}

func staleSignature(ev stripefake.Event, secret string) string {
	_, sig := ev.SignAt(secret, time.Now().Add(-6*time.Minute))
	return sig
}

func ptr(s string) *string { return &s }

// orderCount is the tenant's number of orders.
func orderCount(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) int {
	t.Helper()
	var page struct{ TotalCount int }
	c.Do(t, "GET", tPath(tn.ID, "/orders"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	return page.TotalCount
}

// chargeOutsideAlmoner makes a bank debit on the tenant's account that no
// order of ours made (another system on the same Stripe account) and
// returns its PaymentIntent.
func chargeOutsideAlmoner(t *testing.T, fake *stripefake.Server, secretKey string) string {
	t.Helper()
	p := stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: secretKey})
	res, err := p.Charge(context.Background(), processor.ChargeRequest{IdempotencyKey: "elsewhere/" + traceid.New(), AmountMinor: 999, Currency: "usd",
		PaymentMethodID: "pm_usBankAccount", PaymentMethodType: "us_bank_account", DonorIPAddress: "203.0.113.9", DonorUserAgent: "other system"})
	if err != nil || res.Outcome != processor.Processing {
		t.Fatalf("charge outside Almoner: %+v, %v", res, err)
	}
	return res.Reference
}

// TestStripeProduction: a production tenant without Stripe cannot take
// cards (no test processor there); once its live account is connected, its
// charges go to that account with its live key.
func TestStripeProduction(t *testing.T) {
	t.Parallel()
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	c := apptest.Start(t, apptest.Options{Environment: "production", Settings: map[string]string{"ALMONER_STRIPE_API_BASE": fake.URL}})
	f := newOrderFixture(t, c, "api-access:enabled", "payment-processor:enabled")
	st := stripeTenant{orderFixture: f}
	r := c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, st.cardOrder("Card", "tok_visa", 20)).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["Payments[0].PaymentMethod"]) != 1 || !strings.HasPrefix(e["Payments[0].PaymentMethod"][0], "Payment.ProcessorNotConfigured") {
		t.Errorf("card payment without a processor in production: %v", e)
	}
	live := "sk_live_" + traceid.New()[:24]
	if p := c.SetProcessor(t, f.tn.ID, live, "whsec_"+traceid.New()); p.GetMode() != "live" {
		t.Fatalf("processor = %v", p)
	}
	o := c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, st.cardOrder("Card", "pm_card_visa", 20)).Expect(t, http.StatusCreated).Map(t)
	if reqs := chargesOf(fake, o["id"].(string)); len(reqs) != 1 || reqs[0].SecretKey != live {
		t.Errorf("live charge = %+v", reqs)
	}
	// The orders service keeps the processor it read (tenantproc.Cached):
	// a rotated key, then a cleared processor, still apply to the first
	// order after the command answered.
	rotated := "sk_live_" + traceid.New()[:24]
	c.SetProcessor(t, f.tn.ID, rotated, "whsec_"+traceid.New())
	o = c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, st.cardOrder("Card", "pm_card_visa", 21)).Expect(t, http.StatusCreated).Map(t)
	if reqs := chargesOf(fake, o["id"].(string)); len(reqs) != 1 || reqs[0].SecretKey != rotated {
		t.Errorf("charge after the key was rotated = %+v", reqs)
	}
	if _, err := c.Admin.ClearTenantProcessor(context.Background(), &authv1.ClearTenantProcessorRequest{TenantId: f.tn.ID}); err != nil {
		t.Fatal(err)
	}
	r = c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, st.cardOrder("Card", "pm_card_visa", 22)).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["Payments[0].PaymentMethod"]) != 1 || !strings.HasPrefix(e["Payments[0].PaymentMethod"][0], "Payment.ProcessorNotConfigured") {
		t.Errorf("card payment after the processor was cleared: %v", e)
	}
}

// refusedNotifications sums the tenant's refused notifications of reason
// as the operations log reads them (orders.operations_v1 over the rows).
func refusedNotifications(t *testing.T, c *apptest.Cluster, tenantID, reason string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, rows int
	if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(count), 0), count(*) FROM orders.refused_notifications
		WHERE tenant_id = $1 AND reason = $2`, tenantID, reason).Scan(&n, &rows); err != nil {
		t.Fatal(err)
	}
	var viewed int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM orders.operations_v1
		WHERE tenant_id = $1 AND kind = 'processor_notification_refused' AND detail LIKE '%' || $2 || '%'`, tenantID, reason).Scan(&viewed); err != nil {
		t.Fatal(err)
	}
	if viewed != rows {
		t.Errorf("operations_v1 shows %d refusal rows of %d", viewed, rows)
	}
	return n
}
