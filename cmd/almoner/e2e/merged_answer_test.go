package e2e

import (
	"net/http"
	"testing"
)

// TestOrderForMergedContactAnswersSurvivor: an order for a contact merged
// away answers with the survivor, as it is stored and read back. A keyed
// order answered (and replayed) the merged-away id, rendered before the
// order was written.
func TestOrderForMergedContactAnswersSurvivor(t *testing.T) {
	t.Parallel()
	c, _ := stripeCluster(t, nil)
	st := newStripeTenant(t, c)
	tn := st.tn
	dup := createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Jane", "lastName": "Twice"})["id"].(float64)
	c.Do(t, "POST", mergePath(tn.ID, st.contactID), tn.Key, map[string]any{"duplicateId": dup}).Expect(t, http.StatusOK)

	for _, tc := range []struct {
		name    string
		body    map[string]any
		headers []string
	}{
		{"unkeyed", st.cashOrder(5), nil},
		{"keyed", st.cashOrder(6), []string{"Idempotency-Key", "merged-" + tn.ID}},
		{"keyed, saving a card", st.cardOrder("Card", "pm_card_visa", 7), []string{"Idempotency-Key", "merged-card-" + tn.ID}},
	} {
		tc.body["contactId"] = dup
		if pays := tc.body["payments"].([]any)[0].(map[string]any); pays["paymentMethod"] == "Card" {
			pays["savePaymentMethod"] = true
		}
		o := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, tc.body, tc.headers...).Expect(t, http.StatusCreated).Map(t)
		if o["contactId"] != st.contactID {
			t.Errorf("%s: answer's contactId %v, want the survivor %v", tc.name, o["contactId"], st.contactID)
		}
		if got := c.Do(t, "GET", tPath(tn.ID, "/orders/", o["id"].(string)), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["contactId"] != st.contactID {
			t.Errorf("%s: stored contactId %v, want %v", tc.name, got["contactId"], st.contactID)
		}
		if tc.headers != nil {
			again := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, tc.body, tc.headers...).Expect(t, http.StatusCreated).Map(t)
			if again["id"] != o["id"] || again["contactId"] != st.contactID {
				t.Errorf("%s: replay = %v %v, want %v %v", tc.name, again["id"], again["contactId"], o["id"], st.contactID)
			}
		}
	}
	// The card was saved for the survivor, not the merged-away contact.
	var methods []map[string]any
	c.Do(t, "GET", contactPath(tn.ID, int64(st.contactID))+"/payment-methods", tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &methods)
	if len(methods) != 1 {
		t.Errorf("survivor's methods = %v, want the card saved by the order", methods)
	}
}
