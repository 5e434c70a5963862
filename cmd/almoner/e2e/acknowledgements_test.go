package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestOrderAcknowledgement: a gift starts pending, an item-only order has
// no status; PUT sets doNotAcknowledge and back, the list filters by
// status, each change is an order.updated event with acknowledgementStatus
// in its changes; a contact's doNotAcknowledge round-trips; bad status,
// a non-gift, the scope and the other tenant are refused.
func TestOrderAcknowledgement(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	gift := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(30)).Expect(t, http.StatusCreated).Map(t)
	if gift["acknowledgementStatus"] != "pending" {
		t.Errorf("new gift acknowledgementStatus = %v", gift["acknowledgementStatus"])
	}
	id := gift["id"].(string)
	itemOnly := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, map[string]any{"contactId": f.contactID, "currency": "USD",
		"items":    []any{map[string]any{"itemId": f.item, "quantity": 1}},
		"payments": []any{map[string]any{"paymentMethod": "Cash", "amount": 25}}}).Expect(t, http.StatusCreated).Map(t)
	if _, ok := itemOnly["acknowledgementStatus"]; ok && itemOnly["acknowledgementStatus"] != nil {
		t.Errorf("item-only order has acknowledgementStatus %v", itemOnly["acknowledgementStatus"])
	}
	// CreateOrder answers before the acknowledgement is read: GET has it.
	got := c.Do(t, "GET", tPath(tn.ID, "/orders/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["acknowledgementStatus"] != "pending" {
		t.Errorf("GET gift acknowledgementStatus = %v", got["acknowledgementStatus"])
	}

	ack := tPath(tn.ID, "/orders/", id, "/acknowledgement")
	if e := errorsOf(t, c.Do(t, "PUT", ack, tn.Key, map[string]any{"status": "acknowledged"}).Expect(t, http.StatusBadRequest)); len(e["Status"]) == 0 {
		t.Errorf("errors %v, want Status", e)
	}
	c.Do(t, "PUT", tPath(tn.ID, "/orders/", itemOnly["id"].(string), "/acknowledgement"), tn.Key, map[string]any{"status": "doNotAcknowledge"}).
		Expect(t, http.StatusBadRequest)
	if o := c.Do(t, "PUT", ack, tn.Key, map[string]any{"status": "doNotAcknowledge"}).Expect(t, http.StatusOK).Map(t); o["acknowledgementStatus"] != "doNotAcknowledge" {
		t.Errorf("after PUT: %v", o["acknowledgementStatus"])
	}
	count := func(status string) float64 {
		return c.Do(t, "GET", tPath(tn.ID, "/orders?acknowledgementStatus="+status), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["totalCount"].(float64)
	}
	if n, m := count("doNotAcknowledge"), count("pending"); n != 1 || m != 0 {
		t.Errorf("doNotAcknowledge %v, pending %v; want 1 and 0 (the item-only order is no gift)", n, m)
	}
	c.Do(t, "GET", tPath(tn.ID, "/orders?acknowledgementStatus=maybe"), tn.Key, nil).Expect(t, http.StatusBadRequest)
	c.Do(t, "PUT", ack, tn.Key, map[string]any{"status": "pending"}).Expect(t, http.StatusOK)
	if n := count("pending"); n != 1 {
		t.Errorf("pending %v after PUT pending", n)
	}
	updates := 0
	// The feed shows a change once every earlier commit is visible: wait.
	for deadline := time.Now().Add(10 * time.Second); updates < 2 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		updates = 0
		for _, raw := range readFeed(t, c, tn, "limit=100&entityType=Order&entityId="+id).Items {
			if s := string(raw); strings.Contains(s, `"order.updated"`) && strings.Contains(s, "acknowledgementStatus") {
				updates++
			}
		}
	}
	if updates != 2 {
		t.Errorf("%d order.updated events with acknowledgementStatus, want 2", updates)
	}

	contact := tPath(tn.ID, fmt.Sprintf("/contacts/%d", int64(f.contactID)))
	ct := c.Do(t, "GET", contact, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	ct["communicationPreferences"] = map[string]any{"doNotAcknowledge": true}
	if got := c.Do(t, "PUT", contact, tn.Key, ct).Expect(t, http.StatusOK).Map(t); got["communicationPreferences"].(map[string]any)["doNotAcknowledge"] != true {
		t.Errorf("contact preferences %v", got["communicationPreferences"])
	}

	narrow := c.NewKey(t, tn.ID, "orders:view", "donations:view")
	c.Do(t, "PUT", ack, narrow, map[string]any{"status": "pending"}).Expect(t, http.StatusForbidden)
	other := c.NewTenant(t)
	c.Do(t, "PUT", tPath(other.ID, "/orders/", id, "/acknowledgement"), other.Key, map[string]any{"status": "pending"}).Expect(t, http.StatusNotFound)
}
