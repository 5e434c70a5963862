package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// shipFixture is a tenant with a contact, a fund and two stocked items.
type shipFixture struct {
	orderFixture
	mug string
}

// newShipFixture builds it in tn, or in a new tenant when tn is empty.
func newShipFixture(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) shipFixture {
	t.Helper()
	f := shipFixture{orderFixture: newOrderFixtureIn(t, c, tn)}
	mug := invItem("MUG-" + f.tn.ID[:8])
	mug["name"], mug["stockOnHand"] = "Coffee mug", 5
	f.mug = invCreate(t, c, f.tn, mug)["id"].(string)
	return f
}

func shipPath(tenantID string, rest ...string) string {
	return "/api/tenants/" + tenantID + "/shipments" + strings.Join(rest, "")
}

// itemOrder records an order of totes and mugs shipped to Elm St and
// returns its id.
func (f shipFixture) itemOrder(t *testing.T, totes, mugs int) string {
	t.Helper()
	var items []any
	total := 0
	if totes > 0 {
		items = append(items, map[string]any{"itemId": f.item, "quantity": totes})
		total += 25 * totes
	}
	if mugs > 0 {
		items = append(items, map[string]any{"itemId": f.mug, "quantity": mugs})
		total += 25 * mugs
	}
	body := map[string]any{
		"contactId": f.contactID, "currency": "USD", "items": items,
		"shippingAddress": map[string]any{"line1": "2 Elm St", "city": "Springfield", "postalCode": "02134", "country": "US"},
		"payments":        []any{map[string]any{"paymentMethod": "Cash", "amount": total}},
	}
	return f.c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
}

// post sends a transition and returns the answer.
func (f shipFixture) post(t *testing.T, id, action string, body any, want int) map[string]any {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	return f.c.Do(t, "POST", shipPath(f.tn.ID, "/", id, "/", action), f.tn.Key, body).Expect(t, want).Map(t)
}

func (f shipFixture) stock(t *testing.T, item string) float64 {
	t.Helper()
	return invStock(t, f.c, f.tn, item)
}

// illegal checks a refused transition: 400 under "" naming both states.
func illegal(t *testing.T, p map[string]any, from, to string) {
	t.Helper()
	errs, _ := p["errors"].(map[string]any)
	msgs, _ := errs[""].([]any)
	if len(msgs) != 1 {
		t.Fatalf("refused transition %s→%s: %v", from, to, p)
	}
	m := msgs[0].(string)
	if !strings.HasPrefix(m, "Shipment.IllegalTransition") || !strings.Contains(m, from) || !strings.Contains(m, to) {
		t.Errorf("refused transition %s→%s says %q", from, to, m)
	}
}

var ship1 = map[string]any{"carrier": "USPS", "trackingNumber": "9400 1000 0000 0000 0001", "trackingUrl": "https://tools.usps.com/t/1"}

// TestShipmentsFlow walks a shipment through every transition and every
// refused one, split, cancel, return with and without restock, a void, an
// address correction, the list, bulk ship, scopes and tenants.
func TestShipmentsFlow(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newShipFixture(t, c, apptest.Tenant{})
	tn := f.tn

	// The order's first shipment has the order's id, and GET /orders/{id}
	// names it.
	oid := f.itemOrder(t, 2, 1)
	o := c.Do(t, "GET", tPath(tn.ID, "/orders/", oid), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if ids, _ := o["shipmentIds"].([]any); len(ids) != 1 || ids[0] != oid {
		t.Fatalf("order shipmentIds = %v, want [%s]", o["shipmentIds"], oid)
	}
	sh := c.Do(t, "GET", shipPath(tn.ID, "/", oid), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if sh["status"] != "pending" || sh["orderId"] != oid || len(sh["lines"].([]any)) != 2 {
		t.Fatalf("shipment = %v", sh)
	}
	if f.stock(t, f.item) != 8 || f.stock(t, f.mug) != 4 {
		t.Fatalf("stock after order = %v, %v", f.stock(t, f.item), f.stock(t, f.mug))
	}

	// Every refused move from pending, then the happy path with repeats.
	illegal(t, f.post(t, oid, "deliver", nil, http.StatusBadRequest), "pending", "delivered")
	illegal(t, f.post(t, oid, "return", map[string]any{"reason": "x", "restock": true}, http.StatusBadRequest), "pending", "returned")
	if got := f.post(t, oid, "pack", nil, http.StatusOK); got["status"] != "packed" || got["packedAt"] == nil {
		t.Errorf("pack = %v", got)
	}
	f.post(t, oid, "pack", nil, http.StatusOK)
	illegal(t, f.post(t, oid, "deliver", nil, http.StatusBadRequest), "packed", "delivered")
	shipped := f.post(t, oid, "ship", ship1, http.StatusOK)
	if shipped["status"] != "shipped" || shipped["carrier"] != "USPS" || shipped["trackingNumber"] != ship1["trackingNumber"] {
		t.Errorf("ship = %v", shipped)
	}
	again := f.post(t, oid, "ship", ship1, http.StatusOK)
	if again["updatedAt"] != shipped["updatedAt"] {
		t.Errorf("repeated ship changed the shipment: %v then %v", shipped["updatedAt"], again["updatedAt"])
	}
	illegal(t, f.post(t, oid, "ship", map[string]any{"carrier": "UPS", "trackingNumber": "1Z"}, http.StatusBadRequest), "shipped", "shipped")
	illegal(t, f.post(t, oid, "pack", nil, http.StatusBadRequest), "shipped", "packed")
	illegal(t, f.post(t, oid, "cancel", map[string]any{"reason": "x"}, http.StatusBadRequest), "shipped", "cancelled")
	c.Do(t, "PUT", shipPath(tn.ID, "/", oid), tn.Key, map[string]any{"shippingAddress": map[string]any{
		"line1": "9 Oak St", "city": "Springfield", "postalCode": "02134", "country": "US"}}).Expect(t, http.StatusBadRequest)
	f.post(t, oid, "deliver", nil, http.StatusOK)
	f.post(t, oid, "deliver", nil, http.StatusOK)
	illegal(t, f.post(t, oid, "ship", ship1, http.StatusBadRequest), "delivered", "shipped")
	// A return without restock leaves the stock out.
	ret := f.post(t, oid, "return", map[string]any{"reason": "Damaged", "restock": false}, http.StatusOK)
	if ret["status"] != "returned" || f.stock(t, f.item) != 8 {
		t.Errorf("return without restock = %v, tote stock %v", ret, f.stock(t, f.item))
	}
	illegal(t, f.post(t, oid, "return", map[string]any{"reason": "Damaged", "restock": true}, http.StatusBadRequest), "returned", "returned")

	// Split, then ship both; the order names both shipments.
	o2 := f.itemOrder(t, 3, 0)
	split := f.post(t, o2, "split", map[string]any{"lines": []any{map[string]any{"itemId": f.item, "quantity": 1}}}, http.StatusCreated)
	if split["status"] != "pending" || split["id"] == o2 || split["orderId"] != o2 {
		t.Fatalf("split = %v", split)
	}
	if l := split["lines"].([]any)[0].(map[string]any); l["quantity"] != float64(1) {
		t.Errorf("split line = %v", l)
	}
	rest := c.Do(t, "GET", shipPath(tn.ID, "/", o2), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if l := rest["lines"].([]any)[0].(map[string]any); l["quantity"] != float64(2) {
		t.Errorf("split leaves %v", l)
	}
	f.post(t, o2, "split", map[string]any{"lines": []any{map[string]any{"itemId": f.item, "quantity": 2}}}, http.StatusBadRequest)
	f.post(t, o2, "ship", ship1, http.StatusOK)
	f.post(t, split["id"].(string), "ship", map[string]any{"carrier": "UPS", "trackingNumber": "1Z999"}, http.StatusOK)
	ord := c.Do(t, "GET", tPath(tn.ID, "/orders/", o2), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if ids := ord["shipmentIds"].([]any); len(ids) != 2 || ids[0] != o2 || ids[1] != split["id"] {
		t.Errorf("split order shipmentIds = %v", ids)
	}
	if f.stock(t, f.item) != 5 {
		t.Errorf("tote stock after split order = %v, want 5", f.stock(t, f.item))
	}

	// Cancel gives the stock back; a return with restock too.
	o3 := f.itemOrder(t, 1, 1)
	c.Do(t, "PUT", shipPath(tn.ID, "/", o3), tn.Key, map[string]any{"shippingAddress": map[string]any{
		"line1": "9 Oak St", "city": "Shelbyville", "postalCode": "02135", "country": "US"}}).Expect(t, http.StatusOK)
	f.post(t, o3, "cancel", map[string]any{}, http.StatusBadRequest) // a reason is required
	if got := f.post(t, o3, "cancel", map[string]any{"reason": "Donor asked"}, http.StatusOK); got["status"] != "cancelled" {
		t.Errorf("cancel = %v", got)
	}
	f.post(t, o3, "cancel", map[string]any{"reason": "Donor asked"}, http.StatusOK)
	for _, m := range []struct {
		action, to string
		body       map[string]any
	}{{"pack", "packed", map[string]any{}}, {"ship", "shipped", ship1}, {"deliver", "delivered", map[string]any{}}, {"return", "returned", map[string]any{"reason": "x", "restock": true}}} {
		illegal(t, f.post(t, o3, m.action, m.body, http.StatusBadRequest), "cancelled", m.to)
	}
	illegal(t, f.post(t, o3, "cancel", map[string]any{"reason": "Another reason"}, http.StatusBadRequest), "cancelled", "cancelled")
	f.post(t, o3, "split", map[string]any{"lines": []any{map[string]any{"itemId": f.item, "quantity": 1}}}, http.StatusBadRequest)
	if f.stock(t, f.item) != 5 || f.stock(t, f.mug) != 4 {
		t.Errorf("stock after cancel = %v, %v; want 5, 4", f.stock(t, f.item), f.stock(t, f.mug))
	}
	o4 := f.itemOrder(t, 1, 0)
	f.post(t, o4, "ship", ship1, http.StatusOK)
	f.post(t, o4, "return", map[string]any{"reason": "Wrong size", "restock": true}, http.StatusOK)
	if f.stock(t, f.item) != 5 {
		t.Errorf("tote stock after restock = %v, want 5", f.stock(t, f.item))
	}

	// A void cancels a packed shipment (stock back) and leaves a shipped
	// one alone (stock stays out).
	o5 := f.itemOrder(t, 1, 0)
	f.post(t, o5, "pack", nil, http.StatusOK)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", o5, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if got := c.Do(t, "GET", shipPath(tn.ID, "/", o5), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["status"] != "cancelled" {
		t.Errorf("packed shipment after void = %v", got["status"])
	}
	o6 := f.itemOrder(t, 1, 0)
	f.post(t, o6, "ship", ship1, http.StatusOK)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", o6, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if got := c.Do(t, "GET", shipPath(tn.ID, "/", o6), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["status"] != "shipped" {
		t.Errorf("shipped shipment after void = %v", got["status"])
	}
	if f.stock(t, f.item) != 4 {
		t.Errorf("tote stock after the voids = %v, want 4", f.stock(t, f.item))
	}
	// A full refund cancels a pending shipment too.
	o7 := f.itemOrder(t, 1, 0)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", o7, "/refunds"), tn.Key, map[string]any{}).Expect(t, http.StatusCreated)
	if got := c.Do(t, "GET", shipPath(tn.ID, "/", o7), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["status"] != "cancelled" || f.stock(t, f.item) != 4 {
		t.Errorf("pending shipment after a full refund = %v, tote stock %v", got["status"], f.stock(t, f.item))
	}

	shipmentsListAndBulk(t, f, o2)
	shipmentsAccess(t, c, f, oid)
}

// shipmentsListAndBulk checks the list's filters and a bulk ship with one
// bad row.
func shipmentsListAndBulk(t *testing.T, f shipFixture, o2 string) {
	t.Helper()
	c, tn := f.c, f.tn
	var page struct {
		Items      []map[string]any
		TotalCount int
	}
	c.Do(t, "GET", shipPath(tn.ID)+"?status=shipped", tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 3 { // o2 and its split, o6
		t.Errorf("shipped shipments = %d, want 3: %v", page.TotalCount, page.Items)
	}
	c.Do(t, "GET", shipPath(tn.ID)+"?orderId="+o2, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 2 {
		t.Errorf("order's shipments = %d, want 2", page.TotalCount)
	}
	c.Do(t, "GET", shipPath(tn.ID)+"?status=lost", tn.Key, nil).Expect(t, http.StatusBadRequest)

	a, b := f.itemOrder(t, 1, 0), f.itemOrder(t, 0, 1)
	var bulk struct{ Results []map[string]any }
	c.Do(t, "POST", shipPath(tn.ID, "/ship-bulk"), tn.Key, map[string]any{"items": []any{
		map[string]any{"shipmentId": a, "carrier": "USPS", "trackingNumber": "A1"},
		map[string]any{"shipmentId": o2, "carrier": "USPS", "trackingNumber": "OTHER"},
		map[string]any{"shipmentId": b, "carrier": "USPS", "trackingNumber": "B1"},
	}}).Expect(t, http.StatusOK).JSON(t, &bulk)
	if len(bulk.Results) != 3 || bulk.Results[0]["status"] != "shipped" || bulk.Results[2]["status"] != "shipped" {
		t.Fatalf("bulk results = %v", bulk.Results)
	}
	if e, _ := bulk.Results[1]["error"].(map[string]any); e["code"] != "Shipment.IllegalTransition" || bulk.Results[1]["status"] != nil {
		t.Errorf("bulk bad row = %v", bulk.Results[1])
	}
}

// shipmentsAccess checks 403 per scope and 404 for another tenant's
// shipment.
func shipmentsAccess(t *testing.T, c *apptest.Cluster, f shipFixture, id string) {
	t.Helper()
	tn := f.tn
	view := c.NewKey(t, tn.ID, "shipments:view")
	manage := c.NewKey(t, tn.ID, "shipments:manage")
	c.Do(t, "GET", shipPath(tn.ID, "/", id), view, nil).Expect(t, http.StatusOK)
	c.Do(t, "GET", shipPath(tn.ID), manage, nil).Expect(t, http.StatusForbidden)
	c.Do(t, "GET", shipPath(tn.ID, "/", id), manage, nil).Expect(t, http.StatusForbidden)
	for _, action := range []string{"pack", "ship", "deliver", "cancel", "return", "split"} {
		c.Do(t, "POST", shipPath(tn.ID, "/", id, "/", action), view, map[string]any{}).Expect(t, http.StatusForbidden)
	}
	c.Do(t, "POST", shipPath(tn.ID, "/ship-bulk"), view, map[string]any{"items": []any{}}).Expect(t, http.StatusForbidden)
	other := c.NewTenant(t)
	c.Do(t, "GET", shipPath(other.ID, "/", id), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", shipPath(other.ID, "/", id, "/pack"), other.Key, map[string]any{}).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", shipPath(tn.ID, "/", id), other.Key, nil).Expect(t, http.StatusNotFound)
}
