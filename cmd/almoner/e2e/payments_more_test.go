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
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
)

// TestStripeRefundsVoidsDisputes: refunds and voids go to Stripe first and
// are recorded only when it accepts; refunds made in Stripe's dashboard
// and disputes arrive as notifications and are recorded once.
func TestStripeRefundsVoidsDisputes(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	o := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 50)).Expect(t, http.StatusCreated).Map(t)
	id, pi := o["id"].(string), paymentOf(t, o)["processorReference"].(string)

	// A refund through the API: Stripe refunds it, then it is recorded.
	r := c.Do(t, "POST", orders+"/"+id+"/refunds", st.tn.Key, map[string]any{"amount": 20, "reason": "duplicate gift"}).Expect(t, http.StatusCreated).Map(t)
	if r["orderStatus"] != "PartiallyRefunded" || r["refundedAmount"] != 20.0 {
		t.Errorf("after refund = %v", r)
	}
	refunds := fake.Refunds(pi)
	if len(refunds) != 1 || refunds[0].Amount != 2000 {
		t.Fatalf("stripe refunds = %+v", refunds)
	}
	var refundReq stripefake.Request
	for _, q := range fake.Requests() {
		if q.Path == "/v1/refunds" && q.Status == http.StatusOK {
			refundReq = q
		}
	}
	if refundReq.SecretKey != st.secretKey || !strings.HasSuffix(refundReq.IdempotencyKey, "/"+paymentOf(t, o)["id"].(string)) {
		t.Errorf("refund request = %+v", refundReq)
	}

	// Stripe refuses: 400, and nothing is recorded.
	fake.RefuseRefunds(true)
	e := c.Do(t, "POST", orders+"/"+id+"/refunds", st.tn.Key, map[string]any{"amount": 10}).Expect(t, http.StatusBadRequest)
	if errs := errorsOf(t, e); len(errs[""]) != 1 || !strings.HasPrefix(errs[""][0], "Payment.RefusedByProcessor") {
		t.Errorf("refused refund errors = %v", errs)
	}
	fake.RefuseRefunds(false)
	if got := c.Do(t, "GET", orders+"/"+id, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["refundedAmount"] != 20.0 {
		t.Errorf("refunded after a refused refund = %v", got["refundedAmount"])
	}

	// Stripe's own notice of the API refund records nothing more.
	for _, ev := range fake.Events() {
		if ev.Type == "charge.refunded" && ev.PaymentIntent == pi {
			if code := st.notify(t, c, ev); code != http.StatusOK {
				t.Errorf("charge.refunded of our own refund answered %d", code)
			}
		}
	}
	// A refund made in the dashboard: recorded once, for its amount.
	ev, err := fake.DashboardRefund(pi, 500)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code := st.notify(t, c, ev); code != http.StatusOK {
			t.Fatalf("dashboard refund notification answered %d", code)
		}
	}
	got := c.Do(t, "GET", orders+"/"+id, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["refundedAmount"] != 25.0 || got["orderStatus"] != "PartiallyRefunded" {
		t.Errorf("after the dashboard refund = %v %v", got["refundedAmount"], got["orderStatus"])
	}
	var processorRefunds int
	withDB(t, c, func(conn *pgx.Conn) {
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM orders.refunds WHERE tenant_id = $1 AND order_id = $2 AND source = 'processor' AND amount_minor = 500`,
			st.tn.ID, id).Scan(&processorRefunds); err != nil {
			t.Fatal(err)
		}
	})
	if processorRefunds != 1 {
		t.Errorf("%d processor refunds recorded, want 1", processorRefunds)
	}

	// A dispute: the payment is Disputed, once.
	ev, err = fake.Dispute(pi)
	if err != nil {
		t.Fatal(err)
	}
	if code := st.notify(t, c, ev); code != http.StatusOK {
		t.Fatalf("dispute notification answered %d", code)
	}
	if p := paymentOf(t, c.Do(t, "GET", orders+"/"+id, st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)); p["paymentStatus"] != "Disputed" {
		t.Errorf("disputed payment = %v", p)
	}

	// A void of a Pending order cancels its PaymentIntent.
	pending := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_authenticationRequired", 12)).Expect(t, http.StatusCreated).Map(t)
	v := c.Do(t, "POST", orders+"/"+pending["id"].(string)+"/void", st.tn.Key, map[string]any{}).Expect(t, http.StatusOK).Map(t)
	if v["orderStatus"] != "Voided" || paymentOf(t, v)["paymentStatus"] != "Voided" {
		t.Errorf("voided pending order = %v", v)
	}
	if p, _ := fake.PaymentIntent(paymentOf(t, pending)["processorReference"].(string)); p.Status != "canceled" {
		t.Errorf("voided order's PaymentIntent is %s, want canceled", p.Status)
	}
	// A void of a Captured one refunds it in full.
	captured := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_mastercard", 33)).Expect(t, http.StatusCreated).Map(t)
	c.Do(t, "POST", orders+"/"+captured["id"].(string)+"/void", st.tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if p, _ := fake.PaymentIntent(paymentOf(t, captured)["processorReference"].(string)); p.AmountRefunded != 3300 {
		t.Errorf("voided captured order refunded %d at Stripe, want 3300", p.AmountRefunded)
	}
}

// TestStripeUnavailable: Stripe failing or unreachable is a sanitized 503
// with nothing recorded, and the retry with the same idempotency key
// charges once, even when Stripe had charged before its answer was lost.
func TestStripeUnavailable(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	for _, tc := range []struct {
		name   string
		inject func()
	}{
		{"stripe 500", func() { fake.FailNext(1, http.StatusInternalServerError) }},
		{"answer lost after charging", func() { fake.LoseNextResponses(1) }},
	} {
		key := "retry-" + tc.name
		before := orderCount(t, c, st.tn)
		tc.inject()
		r := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 18), "Idempotency-Key", key).Expect(t, http.StatusServiceUnavailable)
		if strings.Contains(strings.ToLower(string(r.Body)), "stripe") || !strings.Contains(string(r.Body), `"traceId"`) {
			t.Errorf("%s: 503 body %s", tc.name, r.Body)
		}
		if n := orderCount(t, c, st.tn); n != before {
			t.Errorf("%s: %d orders after a 503, want %d", tc.name, n, before)
		}
		o := c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 18), "Idempotency-Key", key).Expect(t, http.StatusCreated).Map(t)
		var intents []string
		for _, p := range fake.PaymentIntents() {
			if p.Metadata["order_id"] == o["id"] {
				intents = append(intents, p.ID)
			}
		}
		if len(intents) != 1 || intents[0] != paymentOf(t, o)["processorReference"] {
			t.Errorf("%s: PaymentIntents of the order %v, reference %v", tc.name, intents, paymentOf(t, o)["processorReference"])
		}
	}
	// Stripe gone entirely: 503, nothing recorded.
	before := orderCount(t, c, st.tn)
	fake.Close()
	c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", "pm_card_visa", 18)).Expect(t, http.StatusServiceUnavailable)
	if n := orderCount(t, c, st.tn); n != before {
		t.Errorf("%d orders with Stripe unreachable, want %d", n, before)
	}
}

// TestStripeUndoAfterCharge: a failure after a charge succeeded (the batch
// was closed meanwhile; a second payment declined) gives the money back.
func TestStripeUndoAfterCharge(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	// Two card payments, the second declined: the first is refunded.
	b := st.cashOrder(30)
	b["payments"] = []any{map[string]any{"paymentMethod": "Card", "amount": 10, "paymentToken": "pm_card_visa"},
		map[string]any{"paymentMethod": "Card", "amount": 20, "paymentToken": "pm_card_chargeDeclined"}}
	c.Do(t, "POST", orders, st.tn.Key, b).Expect(t, http.StatusBadRequest)
	var first stripefake.PaymentIntent
	for _, p := range fake.PaymentIntents() {
		if p.Amount == 1000 && p.SecretKey == st.secretKey {
			first = p
		}
	}
	if first.ID == "" || first.AmountRefunded != 1000 {
		t.Errorf("first payment of a declined order: %+v, want refunded in full", first)
	}
	// A declined item order gives its reserved stock back.
	stock := func() float64 {
		return c.Do(t, "GET", tPath(st.tn.ID, "/inventory/", st.item), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)["stockOnHand"].(float64)
	}
	before := stock()
	items := map[string]any{"contactId": st.contactID, "currency": "USD", "items": []any{map[string]any{"itemId": st.item, "quantity": 3}},
		"payments": []any{map[string]any{"paymentMethod": "Card", "amount": 75, "paymentToken": "pm_card_chargeDeclined"}}}
	c.Do(t, "POST", orders, st.tn.Key, items).Expect(t, http.StatusBadRequest)
	if s := stock(); s != before {
		t.Errorf("stock %v after a declined item order, want %v", s, before)
	}
	// An order naming a closed batch is refused before its charge: nothing
	// is charged, whether the card would succeed or wait for 3-D Secure.
	// (A batch closing between the charge and the record is undone:
	// services/orders TestBatchClosingAfterChargeUndoes.)
	batch := c.Do(t, "POST", tPath(st.tn.ID, "/batches"), st.tn.Key, map[string]any{"name": "Closed gala"}).Expect(t, http.StatusCreated).Map(t)
	c.Do(t, "POST", tPath(st.tn.ID, "/batches/", batch["id"].(string), "/close"), st.tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	for _, tc := range []struct {
		token  string
		amount float64
	}{{"pm_card_visa", 41}, {"pm_card_authenticationRequired", 42}} {
		b = st.cardOrder("Card", tc.token, tc.amount)
		b["batchId"] = batch["id"]
		c.Do(t, "POST", orders, st.tn.Key, b).Expect(t, http.StatusBadRequest)
		for _, p := range fake.PaymentIntents() {
			if p.Amount == int64(tc.amount*100) {
				t.Errorf("%s: order refused by its closed batch was charged: %+v", tc.token, p)
			}
		}
	}
}

// TestStripeSavedPaymentMethods: saving needs payment-methods:manage; a
// saved card is listed, charged with its customer, and detached.
func TestStripeSavedPaymentMethods(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	methods := contactPath(st.tn.ID, int64(st.contactID)) + "/payment-methods"
	save := st.cardOrder("Card", "pm_card_visa", 15)
	save["payments"].([]any)[0].(map[string]any)["savePaymentMethod"] = true

	narrow := c.NewKey(t, st.tn.ID, "orders:create")
	r := c.Do(t, "POST", orders, narrow, save).Expect(t, http.StatusForbidden)
	if !strings.Contains(string(r.Body), "Missing required permission: payment-methods:manage") {
		t.Errorf("403 body = %s", r.Body)
	}
	c.Do(t, "GET", methods, narrow, nil).Expect(t, http.StatusForbidden)

	c.Do(t, "POST", orders, st.tn.Key, save).Expect(t, http.StatusCreated)
	var list []map[string]any
	c.Do(t, "GET", methods, st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list) != 1 || list[0]["type"] != "card" || list[0]["brand"] != "visa" || list[0]["last4"] != "4242" || list[0]["expMonth"] != 12.0 ||
		list[0]["isDefault"] != true || !strings.HasPrefix(fmt.Sprint(list[0]["id"]), "pm_") || list[0]["createdAt"] == nil {
		t.Fatalf("payment methods = %v", list)
	}
	pm := list[0]["id"].(string)
	var customers int
	for _, q := range fake.Requests() {
		if q.Path == "/v1/customers" && q.Status == http.StatusOK {
			customers++
		}
	}
	// A second gift with the saved method: charged with the customer; a
	// second save of it makes no second customer.
	again := st.cardOrder("Card", pm, 16)
	again["payments"].([]any)[0].(map[string]any)["savePaymentMethod"] = true
	o := c.Do(t, "POST", orders, st.tn.Key, again).Expect(t, http.StatusCreated).Map(t)
	reqs := chargesOf(fake, o["id"].(string))
	if len(reqs) != 1 || reqs[0].Customer == "" || reqs[0].PaymentMethod != pm {
		t.Errorf("charge with the saved method = %+v", reqs)
	}
	n := 0
	for _, q := range fake.Requests() {
		if q.Path == "/v1/customers" && q.Status == http.StatusOK {
			n++
		}
	}
	if customers != 1 || n != 1 {
		t.Errorf("stripe customers made: %d then %d, want 1", customers, n)
	}
	c.Do(t, "GET", methods, st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list) != 1 {
		t.Errorf("%d methods after saving the same one again", len(list))
	}
	// A gift with the saved method, not asked to save it: charged with the
	// customer too (the method's row read once, by the owner check).
	o = c.Do(t, "POST", orders, st.tn.Key, st.cardOrder("Card", pm, 17)).Expect(t, http.StatusCreated).Map(t)
	if reqs := chargesOf(fake, o["id"].(string)); len(reqs) != 1 || reqs[0].Customer == "" || reqs[0].PaymentMethod != pm || reqs[0].Form.Get("setup_future_usage") != "" {
		t.Errorf("charge with the saved method, not saved again = %+v", reqs)
	}

	// Another tenant: its own path with this contact id is 404.
	other := newStripeTenant(t, c)
	c.Do(t, "GET", contactPath(other.tn.ID, int64(st.contactID)+100000)+"/payment-methods", other.tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "DELETE", contactPath(other.tn.ID, int64(st.contactID)+100000)+"/payment-methods/"+pm, other.tn.Key, nil).Expect(t, http.StatusNotFound)
	// And the path of this tenant with the other's key: 404 before any handler.
	c.Do(t, "GET", methods, other.tn.Key, nil).Expect(t, http.StatusNotFound)

	c.Do(t, "DELETE", methods+"/"+pm, st.tn.Key, nil).Expect(t, http.StatusNoContent)
	c.Do(t, "GET", methods, st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list) != 0 {
		t.Errorf("methods after delete = %v", list)
	}
	detached := false
	for _, q := range fake.Requests() {
		detached = detached || (q.Path == "/v1/payment_methods/"+pm+"/detach" && q.Status == http.StatusOK)
	}
	if !detached {
		t.Error("the method was not detached at Stripe")
	}
	c.Do(t, "DELETE", methods+"/"+pm, st.tn.Key, nil).Expect(t, http.StatusNotFound)
}

// TestStripeRecurringOffSession: a schedule paid by card saves its card;
// two runners charge its installment off-session exactly once; a card
// that needs authentication makes its schedule past_due at once.
func TestStripeRecurringOffSession(t *testing.T) {
	t.Parallel()
	// The runners' processes open the tenant's Stripe key: one sealing key.
	sealing := secretbox.NewKey()
	c, fake := stripeCluster(t, map[string]string{"ALMONER_ORDERS_RUNNER": "false", secretbox.KeyVar: sealing})
	st := newStripeTenant(t, c)
	orders := tPath(st.tn.ID, "/orders")
	schedule := func(token string) (orderID, scheduleID string) {
		b := st.cardOrder("Card", token, 10)
		b["recurringDonations"] = []any{map[string]any{"fundId": st.fund, "amount": 10, "frequency": "monthly"}}
		r := c.Do(t, "POST", orders, st.tn.Key, b).Expect(t, http.StatusCreated).Map(t)
		return r["id"].(string), r["recurringDonationIds"].([]any)[0].(string)
	}
	_, visa := schedule("pm_card_visa")
	_, auth := schedule("pm_card_authenticationRequired")
	// A schedule with a card of its own that attaches but declines later
	// (the order itself paid by another card).
	b := st.cardOrder("Card", "pm_card_mastercard", 10)
	b["recurringDonations"] = []any{map[string]any{"fundId": st.fund, "amount": 10, "frequency": "monthly",
		"paymentMethod": "Card", "paymentToken": "pm_card_chargeCustomerFail"}}
	declining := c.Do(t, "POST", orders, st.tn.Key, b).Expect(t, http.StatusCreated).Map(t)["recurringDonationIds"].([]any)[0].(string)
	var list []map[string]any
	c.Do(t, "GET", contactPath(st.tn.ID, int64(st.contactID))+"/payment-methods", st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list) != 3 {
		t.Fatalf("a card schedule saves its card: %d methods, want 3", len(list))
	}
	withDB(t, c, func(conn *pgx.Conn) {
		if _, err := conn.Exec(context.Background(), `UPDATE orders.recurring_donations SET next_charge_date = (now() AT TIME ZONE 'UTC')::date
			WHERE tenant_id = $1`, st.tn.ID); err != nil {
			t.Fatal(err)
		}
	})
	// Two runners on the same database at once.
	runner := map[string]string{"ALMONER_STRIPE_API_BASE": fake.URL, "ALMONER_ORDERS_RUNNER_INTERVAL": "30ms", secretbox.KeyVar: sealing}
	for range 2 {
		apptest.Start(t, apptest.Options{DatabaseURL: c.DatabaseURL, Settings: runner})
	}
	installments := func(scheduleID string) []stripefake.Request {
		var out []stripefake.Request
		for _, q := range fake.Requests() {
			if q.Path == "/v1/payment_intents" && q.Metadata["schedule_id"] == scheduleID && q.Status == http.StatusOK {
				out = append(out, q)
			}
		}
		return out
	}
	// Wait until the runners have tried all three schedules (the charge,
	// and the two failures they record): they come in one pass, but not
	// at one moment, and a loaded machine spreads them out.
	failedAttempts := func(id string) float64 {
		sc := c.Do(t, "GET", tPath(st.tn.ID, "/recurring-donations/", id), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		n, _ := sc["failedAttempts"].(float64)
		return n
	}
	for deadline := time.Now().Add(60 * time.Second); len(installments(visa)) == 0 || failedAttempts(auth) == 0 || failedAttempts(declining) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the runners did not try all three schedules in 60 s: %d charges of the visa schedule, failed attempts %v and %v",
				len(installments(visa)), failedAttempts(auth), failedAttempts(declining))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // many more ticks of both runners: no second charge
	got := installments(visa)
	if len(got) != 1 || !got[0].OffSession || got[0].Customer == "" || got[0].Amount != 1000 {
		t.Fatalf("installment charges = %+v, want one off-session charge with the customer", got)
	}
	var recorded int
	withDB(t, c, func(conn *pgx.Conn) {
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND schedule_id = $2`, st.tn.ID, visa).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
	})
	if recorded != 1 {
		t.Errorf("%d installment orders, want 1", recorded)
	}
	sc := c.Do(t, "GET", tPath(st.tn.ID, "/recurring-donations/", auth), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "past_due" || sc["failureReason"] != "authentication_required" || sc["failedAttempts"] != 1.0 {
		t.Errorf("schedule whose card needs authentication = %v", sc)
	}
	// A decline is retried on a later day: still active, one attempt made.
	sc = c.Do(t, "GET", tPath(st.tn.ID, "/recurring-donations/", declining), st.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sc["status"] != "active" || sc["failureReason"] != "generic_decline" || sc["failedAttempts"] != 1.0 {
		t.Errorf("schedule whose card declined = %v", sc)
	}
	if n := len(installments(declining)); n != 0 {
		t.Errorf("%d succeeded charges of the declining schedule", n)
	}
}

func withDB(t *testing.T, c *apptest.Cluster, f func(*pgx.Conn)) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	f(conn)
}
