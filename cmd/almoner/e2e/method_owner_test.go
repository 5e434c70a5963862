package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestSavedMethodPaysOnlyForItsContact: a method saved for contact Y may
// not pay for contact X's gift, now or by X's schedule. A Cash order for
// X with a Card schedule on Y's saved card was recorded (201), and the
// runner charged Y's card every period for X's gifts. Each order below is
// a 400 under the token's path, before anything is charged or written:
// on a tenant whose processor the order loads (a card payment), on one
// whose it does not (a cash order), and on a tenant with no processor at
// all whose method was saved earlier.
func TestSavedMethodPaysOnlyForItsContact(t *testing.T) {
	t.Parallel()
	c, fake := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	y := createContact(t, c, st.tn, map[string]any{"contactType": "Individual", "firstName": "Yara", "lastName": "Other"})["id"].(float64)
	save := st.cardOrder("Card", "pm_card_visa", 15)
	save["contactId"] = y
	save["payments"].([]any)[0].(map[string]any)["savePaymentMethod"] = true
	c.Do(t, "POST", tPath(st.tn.ID, "/orders"), st.tn.Key, save).Expect(t, http.StatusCreated)
	var methods []map[string]any
	c.Do(t, "GET", contactPath(st.tn.ID, int64(y))+"/payment-methods", st.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &methods)
	if len(methods) != 1 {
		t.Fatalf("Y's methods = %v", methods)
	}
	theirs := methods[0]["id"].(string)

	schedule := func(body map[string]any) map[string]any {
		body["recurringDonations"] = []any{map[string]any{"fundId": st.fund, "amount": 10, "frequency": "monthly",
			"paymentMethod": "Card", "paymentToken": theirs}}
		return body
	}
	for _, tc := range []struct {
		name, field string
		body        map[string]any
	}{
		{"cash order, schedule on Y's card", "RecurringDonations[0].PaymentToken", schedule(st.cashOrder(10))},
		{"card order, schedule on Y's card", "RecurringDonations[0].PaymentToken", schedule(st.cardOrder("Card", "pm_card_mastercard", 10))},
		{"card payment with Y's card", "Payments[0].PaymentToken", st.cardOrder("Card", theirs, 10)},
	} {
		calls, rows := len(fake.Requests()), tenantAuditRows(t, c, st.tn.ID)
		e := errorsOf(t, c.Do(t, "POST", tPath(st.tn.ID, "/orders"), st.tn.Key, tc.body).Expect(t, http.StatusBadRequest))
		if len(e[tc.field]) == 0 || !strings.HasPrefix(e[tc.field][0], "Payment.MethodOfAnotherContact") {
			t.Errorf("%s: errors = %v, want Payment.MethodOfAnotherContact under %s", tc.name, e, tc.field)
		}
		if n := len(fake.Requests()) - calls; n != 0 {
			t.Errorf("%s: %d requests to Stripe for a refused order, want 0", tc.name, n)
		}
		if n := tenantAuditRows(t, c, st.tn.ID) - rows; n != 0 {
			t.Errorf("%s: %d audit rows for a refused order, want 0", tc.name, n)
		}
	}
	// Y's own gift with Y's card is still taken.
	own := schedule(st.cashOrder(10))
	own["contactId"] = y
	c.Do(t, "POST", tPath(st.tn.ID, "/orders"), st.tn.Key, own).Expect(t, http.StatusCreated)

	// A tenant without a processor (one removed, say) whose table still
	// holds Y's method.
	bare := newOrderFixture(t, c, "api-access:enabled", "payment-processor:enabled")
	yb := createContact(t, c, bare.tn, map[string]any{"contactType": "Individual", "firstName": "Yves", "lastName": "Other"})["id"].(float64)
	withDB(t, c, func(conn *pgx.Conn) {
		if _, err := conn.Exec(context.Background(), `INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4, exp_month, exp_year, is_default)
			VALUES ($1, 'pm_saved_for_yves', $2, 'stripe', 'test', 'cus_yves', 'card', 'visa', '4242', 12, 2040, true)`, bare.tn.ID, int64(yb)); err != nil {
			t.Fatal(err)
		}
	})
	body := bare.cashOrder(10)
	body["recurringDonations"] = []any{map[string]any{"fundId": bare.fund, "amount": 10, "frequency": "monthly",
		"paymentMethod": "Card", "paymentToken": "pm_saved_for_yves"}}
	e := errorsOf(t, c.Do(t, "POST", tPath(bare.tn.ID, "/orders"), bare.tn.Key, body).Expect(t, http.StatusBadRequest))
	if len(e["RecurringDonations[0].PaymentToken"]) == 0 {
		t.Errorf("tenant without a processor: errors = %v, want RecurringDonations[0].PaymentToken", e)
	}
}

// TestSandboxTokenSavedByTwoDonors: in the sandbox (the test processor),
// two donors who save the same test token each get a method of their
// own, as with Stripe's test tokens; the token stays usable by anyone.
// The test processor kept the token itself as the saved method's id, so
// once one donor had saved tok_visa, every other donor's tok_visa was a
// method "saved for another contact" and refused.
func TestSandboxTokenSavedByTwoDonors(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c, "api-access:enabled", "payment-processor:enabled")
	y := createContact(t, c, f.tn, map[string]any{"contactType": "Individual", "firstName": "Yara", "lastName": "Other"})["id"].(float64)
	ids := map[string]bool{}
	for _, contact := range []float64{f.contactID, y} {
		body := f.cashOrder(10)
		body["contactId"] = contact
		body["payments"] = []any{map[string]any{"paymentMethod": "Card", "amount": 10, "paymentToken": "tok_visa", "savePaymentMethod": true}}
		c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusCreated)
		var methods []map[string]any
		c.Do(t, "GET", contactPath(f.tn.ID, int64(contact))+"/payment-methods", f.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &methods)
		if len(methods) != 1 {
			t.Fatalf("contact %v's methods = %v", contact, methods)
		}
		ids[methods[0]["id"].(string)] = true
	}
	if len(ids) != 2 || ids["tok_visa"] {
		t.Errorf("saved methods %v, want two of their own", ids)
	}
}
