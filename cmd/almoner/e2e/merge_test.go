package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// giving is the first giving total of a contact's dashboard: its gift
// count and lifetime total.
func giving(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id any) (int64, float64) {
	t.Helper()
	d := c.Do(t, "GET", contactPath(tn.ID, id)+"/dashboard", tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	totals, _ := d["givingTotals"].([]any)
	if len(totals) == 0 {
		return 0, 0
	}
	g := totals[0].(map[string]any)
	total, _ := g["lifetimeTotal"].(float64)
	return num(g["giftCount"]), total
}

func mergePath(tenantID string, survivor any) string {
	return contactPath(tenantID, survivor) + "/merge"
}

// TestMergeContacts: merging moves the duplicate's gifts, schedule and
// shipment to the survivor (the dashboard counts every gift once, under
// the survivor; the shipments list has the shipment), the duplicate answers 404 with mergedInto and leaves the
// list, a later order for it lands on the survivor; in one process and
// split.
func TestMergeContacts(t *testing.T) {
	t.Parallel()
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			t.Parallel()
			c := apptest.Start(t, apptest.Options{Split: split})
			f := newOrderFixture(t, c)
			tn := f.tn
			survivor := f.contactID
			dup := createContact(t, c, tn, janeBody())
			dupID := dup["id"].(float64)

			survivorOrder := f.cashOrder(50)
			c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, survivorOrder).Expect(t, http.StatusCreated)
			dupOrder := f.cashOrder(100)
			dupOrder["contactId"] = dupID
			c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, dupOrder).Expect(t, http.StatusCreated)
			withSchedule := f.cashOrder(20)
			withSchedule["contactId"] = dupID
			withSchedule["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 20, "frequency": "Monthly",
				"startDate": time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)}}
			sid := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, withSchedule).Expect(t, http.StatusCreated).Map(t)["recurringDonationIds"].([]any)[0].(string)

			if n, total := giving(t, c, tn, survivor); n != 1 || total != 50 {
				t.Errorf("survivor before: %d gifts, %v", n, total)
			}
			if n, total := giving(t, c, tn, dupID); n != 2 || total != 120 {
				t.Errorf("duplicate before: %d gifts, %v", n, total)
			}
			shipment := dupShipment(t, f, dupID)

			merged := c.Do(t, "POST", mergePath(tn.ID, survivor), tn.Key,
				map[string]any{"duplicateId": dupID, "fieldChoices": map[string]any{"email": "duplicate", "notes": "duplicate"}}).
				Expect(t, http.StatusOK).Map(t)
			if merged["id"].(float64) != survivor || merged["firstName"] != "Jane" || merged["notes"] != "Met at the gala." ||
				len(merged["emails"].([]any)) != 2 || len(merged["phones"].([]any)) != 1 || fmt.Sprint(merged["tags"]) != "[donor]" {
				t.Errorf("merged contact = %v", merged)
			}
			if n, total := giving(t, c, tn, survivor); n != 4 || total != 195 { // with the tote order
				t.Errorf("survivor after: %d gifts, %v; want 4, 195", n, total)
			}
			schedule := c.Do(t, "GET", tPath(tn.ID, "/recurring-donations/", sid), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
			if schedule["contactId"].(float64) != survivor {
				t.Errorf("schedule's contact %v, want %v", schedule["contactId"], survivor)
			}
			mergedShipments(t, c, tn, survivor, dupID, shipment)

			// The tombstone.
			for _, path := range []string{contactPath(tn.ID, dupID), contactPath(tn.ID, dupID) + "/dashboard"} {
				r := c.Do(t, "GET", path, tn.Key, nil)
				expectProblem(t, r, http.StatusNotFound)
				if got := r.Map(t)["mergedInto"]; got != survivor {
					t.Errorf("GET %s: mergedInto %v, want %v (%s)", path, got, survivor, r.Body)
				}
			}
			if r := c.Do(t, "GET", contactPath(tn.ID, 987654321), tn.Key, nil); r.Map(t)["mergedInto"] != nil {
				t.Errorf("an unknown contact's 404 names a survivor: %s", r.Body)
			}
			var list struct {
				Items      []map[string]any
				TotalCount int
			}
			c.Do(t, "GET", contactsPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
			if list.TotalCount != 1 || len(list.Items) != 1 || list.Items[0]["id"].(float64) != survivor {
				t.Errorf("list after the merge: %v", list)
			}
			var audit struct{ Items []map[string]any }
			c.Do(t, "GET", contactPath(tn.ID, dupID)+"/audit-logs", tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &audit)
			if len(audit.Items) == 0 || audit.Items[0]["action"] != "Deleted" {
				t.Errorf("duplicate's audit rows: %v", audit.Items)
			}

			// An order for the duplicate after the merge is the survivor's.
			late := f.cashOrder(5)
			late["contactId"] = dupID
			order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, late).Expect(t, http.StatusCreated).Map(t)
			if order["contactId"].(float64) != survivor {
				t.Errorf("late order's contact %v, want %v", order["contactId"], survivor)
			}
			if n, _ := giving(t, c, tn, survivor); n != 5 {
				t.Errorf("survivor after the late order: %d gifts, want 5", n)
			}
		})
	}
}

// dupShipment orders a tote shipped to the duplicate and checks that its
// shipment lists under the duplicate; it returns the shipment's id.
func dupShipment(t *testing.T, f orderFixture, dupID float64) string {
	t.Helper()
	body := map[string]any{
		"contactId": dupID, "currency": "USD", "items": []any{map[string]any{"itemId": f.item, "quantity": 1}},
		"shippingAddress": map[string]any{"line1": "2 Elm St", "city": "Springfield", "postalCode": "02134", "country": "US"},
		"payments":        []any{map[string]any{"paymentMethod": "Cash", "amount": 25}},
	}
	id := f.c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	if ids := contactShipments(t, f.c, f.tn, dupID); len(ids) != 1 || ids[0] != id {
		t.Fatalf("duplicate's shipments before the merge = %v, want [%s]", ids, id)
	}
	return id
}

// mergedShipments checks that the duplicate's shipment lists under the
// survivor, names it, and that none names the tombstone.
func mergedShipments(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, survivor, dupID float64, shipment string) {
	t.Helper()
	if ids := contactShipments(t, c, tn, survivor); !slices.Contains(ids, shipment) {
		t.Errorf("survivor's shipments %v miss the duplicate's %s", ids, shipment)
	}
	if ids := contactShipments(t, c, tn, dupID); len(ids) != 0 {
		t.Errorf("shipments still naming the tombstone: %v", ids)
	}
	sh := c.Do(t, "GET", shipPath(tn.ID, "/", shipment), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sh["contactId"] != survivor {
		t.Errorf("shipment's contact %v, want %v", sh["contactId"], survivor)
	}
}

// contactShipments lists the ids of a contact's shipments.
func contactShipments(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, contact float64) []string {
	t.Helper()
	var page struct{ Items []map[string]any }
	c.Do(t, "GET", shipPath(tn.ID)+fmt.Sprintf("?contactId=%d", int64(contact)), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	ids := make([]string, len(page.Items))
	for i, it := range page.Items {
		ids[i], _ = it["id"].(string)
	}
	return ids
}

// TestMergeContactsRefusals: the scope, another tenant's contact, merging
// into itself and into a tombstone.
func TestMergeContactsRefusals(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	a, b := createContact(t, c, tn, janeBody())["id"], createContact(t, c, tn, janeBody())["id"]
	// Ids are numbered per tenant: the other tenant's third contact has an
	// id this tenant does not use.
	other := c.NewTenant(t)
	var foreign any
	for range 3 {
		foreign = createContact(t, c, other, janeBody())["id"]
	}

	viewer := c.NewKey(t, tn.ID, "contacts:view", "contacts:edit")
	p := expectProblem(t, c.Do(t, "POST", mergePath(tn.ID, a), viewer, map[string]any{"duplicateId": b}), http.StatusForbidden)
	if p.Title != "Missing required permission: contacts:merge" {
		t.Errorf("403 title %q", p.Title)
	}
	expectProblem(t, c.Do(t, "POST", mergePath(tn.ID, a), tn.Key, map[string]any{"duplicateId": foreign}), http.StatusNotFound)
	expectProblem(t, c.Do(t, "POST", mergePath(other.ID, foreign), tn.Key, map[string]any{"duplicateId": a}), http.StatusNotFound)
	p = expectProblem(t, c.Do(t, "POST", mergePath(tn.ID, a), tn.Key, map[string]any{"duplicateId": a}), http.StatusBadRequest)
	if msgs := p.Errors[""]; len(msgs) != 1 || msgs[0] != "Contact.MergeIntoItself: A contact cannot be merged into itself." {
		t.Errorf("merge into itself: %v", p.Errors)
	}
	expectProblem(t, c.Do(t, "POST", mergePath(tn.ID, a), tn.Key, map[string]any{"duplicateId": b, "fieldChoices": map[string]any{"email": "both"}}),
		http.StatusBadRequest)
	c.Do(t, "POST", mergePath(tn.ID, a), tn.Key, map[string]any{"duplicateId": b}).Expect(t, http.StatusOK)
	r := c.Do(t, "POST", mergePath(tn.ID, b), tn.Key, map[string]any{"duplicateId": a})
	expectProblem(t, r, http.StatusNotFound)
	if r.Map(t)["mergedInto"] != a {
		t.Errorf("merge into a tombstone: %s", r.Body)
	}
}
