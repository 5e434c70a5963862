package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

func tPath(tenantID string, rest ...string) string {
	return "/api/tenants/" + tenantID + strings.Join(rest, "")
}

// orderFixture is a tenant with a contact, a deductible and a
// non-deductible fund, and a stocked item.
type orderFixture struct {
	c                     *apptest.Cluster
	tn                    apptest.Tenant
	contactID             float64
	fund, plainFund, item string
}

func newOrderFixture(t *testing.T, c *apptest.Cluster, features ...string) orderFixture {
	t.Helper()
	return newOrderFixtureIn(t, c, c.NewTenant(t, features...))
}

// newOrderFixtureIn builds the fixture in tn (a new tenant when tn is
// empty).
func newOrderFixtureIn(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) orderFixture {
	t.Helper()
	if tn.ID == "" {
		tn = c.NewTenant(t)
	}
	f := orderFixture{c: c, tn: tn}
	ct := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": "Jane", "lastName": "Donor"}).
		Expect(t, http.StatusCreated).Map(t)
	f.contactID = ct["id"].(float64)
	f.fund = c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General", "processingFeePercent": 2.9}).
		Expect(t, http.StatusCreated).Map(t)["id"].(string)
	f.plainFund = c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "Gala tickets", "isTaxDeductible": false}).
		Expect(t, http.StatusCreated).Map(t)["id"].(string)
	f.item = c.Do(t, "POST", tPath(tn.ID, "/inventory"), tn.Key, invItem("TOTE-"+tn.ID[:8])).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	return f
}

func (f orderFixture) cashOrder(amount float64) map[string]any {
	return map[string]any{
		"contactId": f.contactID, "currency": "USD",
		"donations": []any{map[string]any{"fundId": f.fund, "amount": amount}},
		"payments":  []any{map[string]any{"paymentMethod": "Cash", "amount": amount}},
	}
}

func errorsOf(t *testing.T, r *apptest.Response) map[string][]string {
	t.Helper()
	var p invProblem
	r.JSON(t, &p)
	return p.Errors
}

func TestOrdersDonationLifecycle(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn

	// Funds: the plain array of the reference.
	r := c.Do(t, "GET", tPath(tn.ID, "/funds"), tn.Key, nil).Expect(t, http.StatusOK)
	if !strings.HasPrefix(string(r.Body), "[") || !strings.Contains(string(r.Body), `"processingFeePercent":2.90`) || !strings.Contains(string(r.Body), `"isTaxDeductible":false`) {
		t.Errorf("funds = %s", r.Body)
	}

	body := map[string]any{
		"contactId": f.contactID, "currency": "USD",
		"donations": []any{
			map[string]any{"fundId": f.fund, "amount": 100.00, "tribute": map[string]any{"tributeType": "InMemoryOf", "name": "Ada"}},
			map[string]any{"fundId": f.plainFund, "amount": 50},
		},
		"billingAddress": map[string]any{"line1": "1 Main St", "city": "Springfield", "postalCode": "02134", "country": "US"},
		"payments":       []any{map[string]any{"paymentMethod": "Cash", "amount": 120}, map[string]any{"paymentMethod": "Check", "amount": 30, "checkNumber": "1001"}},
	}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated)
	o := r.Map(t)
	for _, frag := range []string{`"orderStatus":"Completed"`, `"donationSubtotal":150.00`, `"totalAmount":150.00`, `"deductibleAmount":100.00`,
		`"isTaxDeductible":true`, `"paymentStatus":"Captured"`, `"paymentMethod":"Check"`, `"orderNumber":1`} {
		if !strings.Contains(string(r.Body), frag) {
			t.Errorf("order %s lacks %s", r.Body, frag)
		}
	}
	if o["contactId"] != f.contactID || o["shippingAddress"] != nil {
		t.Errorf("order = %s", r.Body)
	}
	id := o["id"].(string)
	got := c.Do(t, "GET", tPath(tn.ID, "/orders/", id), tn.Key, nil).Expect(t, http.StatusOK)
	if string(got.Body) != string(r.Body) {
		t.Errorf("get = %s\nwant %s", got.Body, r.Body)
	}
	second := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(25)).Expect(t, http.StatusCreated).Map(t)
	if second["orderNumber"] != float64(2) || second["batchId"] != o["batchId"] {
		t.Errorf("second order number %v batch %v (first batch %v)", second["orderNumber"], second["batchId"], o["batchId"])
	}

	// List: envelope, newest first, filters, keyset token.
	var page struct {
		Items          []map[string]any
		TotalCount     int
		Page, PageSize int
		NextPageToken  string
	}
	c.Do(t, "GET", tPath(tn.ID, "/orders?pageSize=1"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 2 || len(page.Items) != 1 || page.Items[0]["id"] != second["id"] || page.NextPageToken == "" {
		t.Fatalf("page 1 = %+v", page)
	}
	tok := page.NextPageToken
	page.NextPageToken = ""
	c.Do(t, "GET", tPath(tn.ID, "/orders?pageSize=1&pageToken="+tok), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.Page != 2 || len(page.Items) != 1 || page.Items[0]["id"] != id || page.NextPageToken != "" {
		t.Errorf("page 2 = %+v", page)
	}
	for q, want := range map[string]int{
		"fundId=" + f.plainFund: 1, "minAmount=100": 1, "maxAmount=30": 1, "status=Completed": 2, "status=Voided": 0,
		fmt.Sprintf("contactId=%d", int64(f.contactID)): 2, "lineKind=Item": 0, "batchId=" + o["batchId"].(string): 2,
	} {
		c.Do(t, "GET", tPath(tn.ID, "/orders?"+q), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
		if page.TotalCount != want {
			t.Errorf("%s: totalCount %d, want %d", q, page.TotalCount, want)
		}
	}

	// Refunds: partial, then over-refund, then the rest; void is then illegal.
	r = c.Do(t, "POST", tPath(tn.ID, "/orders/", id, "/refunds"), tn.Key, map[string]any{"amount": 40}).Expect(t, http.StatusCreated)
	if !strings.Contains(string(r.Body), `"orderStatus":"PartiallyRefunded"`) || !strings.Contains(string(r.Body), `"refundedAmount":40.00`) {
		t.Errorf("partial refund = %s", r.Body)
	}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders/", id, "/refunds"), tn.Key, map[string]any{"amount": 111}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["Amount"]) != 1 || !strings.Contains(e["Amount"][0], "Order.RefundExceedsRefundable") {
		t.Errorf("over-refund errors = %v", e)
	}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders/", id, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Order.CannotVoid") {
		t.Errorf("void after refund errors = %v", e)
	}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders/", id, "/refunds"), tn.Key, map[string]any{}).Expect(t, http.StatusCreated)
	if !strings.Contains(string(r.Body), `"orderStatus":"Refunded"`) || !strings.Contains(string(r.Body), `"paymentStatus":"Refunded"`) {
		t.Errorf("full refund = %s", r.Body)
	}
	c.Do(t, "POST", tPath(tn.ID, "/orders/", id, "/refunds"), tn.Key, map[string]any{}).Expect(t, http.StatusBadRequest)

	// Void of the second order; voiding twice is an illegal transition.
	r = c.Do(t, "POST", tPath(tn.ID, "/orders/", second["id"].(string), "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if !strings.Contains(string(r.Body), `"orderStatus":"Voided"`) || !strings.Contains(string(r.Body), `"paymentStatus":"Voided"`) {
		t.Errorf("void = %s", r.Body)
	}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders/", second["id"].(string), "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Order.AlreadyVoided") {
		t.Errorf("second void errors = %v", e)
	}

	// Audit rows of every change.
	conn := dbConn(t, c.DatabaseURL)
	var events string
	if err := conn.QueryRow(context.Background(), `SELECT string_agg(DISTINCT event, ',' ORDER BY event) FROM audit.events WHERE tenant_id = $1
		AND entity_type IN ('Order', 'OrderDonation', 'OrderPayment', 'Batch', 'Fund')`, tn.ID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	want := "batch.created,fund.created,order.created,order.deleted,order.updated,order_donation.created,order_payment.created,order_payment.updated"
	if events != want {
		t.Errorf("events = %s, want %s", events, want)
	}
}

func TestOrdersValidationAndAccess(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	other := c.NewTenant(t)
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(10)).Expect(t, http.StatusCreated).Map(t)
	oid := order["id"].(string)

	// Validation paths.
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		field string
	}{
		{"contact zero", func(m map[string]any) { m["contactId"] = 0 }, "ContactId"},
		{"no lines", func(m map[string]any) { delete(m, "donations") }, ""},
		{"bad fund", func(m map[string]any) { m["donations"] = []any{map[string]any{"fundId": "x", "amount": 10}} }, "Donations[0].FundId"},
		{"unknown fund", func(m map[string]any) {
			m["donations"] = []any{map[string]any{"fundId": "0190a4d6-0000-7000-8000-000000000000", "amount": 10}}
		}, "Donations[0].FundId"},
		{"three decimals", func(m map[string]any) { m["donations"] = []any{map[string]any{"fundId": f.fund, "amount": 10.001}} }, "Donations[0].Amount"},
		{"negative", func(m map[string]any) { m["donations"] = []any{map[string]any{"fundId": f.fund, "amount": -1}} }, "Donations[0].Amount"},
		{"bad method", func(m map[string]any) { m["payments"] = []any{map[string]any{"paymentMethod": "Gold", "amount": 10}} }, "Payments[0].PaymentMethod"},
		{"check without number", func(m map[string]any) { m["payments"] = []any{map[string]any{"paymentMethod": "Check", "amount": 10}} }, "Payments[0].CheckNumber"},
		{"external without reference", func(m map[string]any) {
			m["payments"] = []any{map[string]any{"paymentMethod": "External", "amount": 10}}
		}, "Payments[0].Reference"},
		{"payments mismatch", func(m map[string]any) { m["payments"] = []any{map[string]any{"paymentMethod": "Cash", "amount": 9}} }, "Payments"},
		{"no payments", func(m map[string]any) { delete(m, "payments") }, "Payments"},
		{"bad currency", func(m map[string]any) { m["currency"] = "ZZZ" }, "Currency"},
		{"billing without line1", func(m map[string]any) { m["billingAddress"] = map[string]any{"city": "X"} }, "BillingAddress.Line1"},
		{"bad item quantity", func(m map[string]any) { m["items"] = []any{map[string]any{"itemId": f.item, "quantity": 0}} }, "Items[0].Quantity"},
		{"unknown contact", func(m map[string]any) { m["contactId"] = 99999999 }, "ContactId"},
		{"bad frequency", func(m map[string]any) {
			m["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 5, "frequency": "daily"}}
		}, "RecurringDonations[0].Frequency"},
	}
	for _, tc := range cases {
		b := f.cashOrder(10)
		tc.edit(b)
		r := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusBadRequest)
		if e := errorsOf(t, r); len(e[tc.field]) == 0 {
			t.Errorf("%s: errors %v lack %q", tc.name, e, tc.field)
		}
	}

	// Missing scopes: 403 for each endpoint.
	view := c.NewKey(t, tn.ID, "contacts:view")
	for _, x := range []struct{ method, path string }{
		{"POST", "/orders"}, {"GET", "/orders"}, {"GET", "/orders/" + oid}, {"POST", "/orders/" + oid + "/void"},
		{"POST", "/orders/" + oid + "/refunds"}, {"POST", "/funds"}, {"GET", "/batches"}, {"POST", "/batches"},
		{"GET", "/recurring-donations"}, {"POST", "/recurring-donations/" + oid + "/cancel"},
		{"GET", "/recurring-donations/" + oid}, {"PUT", "/funds/" + f.fund}, {"GET", "/funds"},
		{"GET", "/batches/" + order["batchId"].(string)}, {"POST", "/batches/" + order["batchId"].(string) + "/close"},
	} {
		r := c.Do(t, x.method, tPath(tn.ID, x.path), view, map[string]any{})
		if r.Status != http.StatusForbidden {
			t.Errorf("%s %s without scope: %d %s", x.method, x.path, r.Status, r.Body)
		}
	}
	// orders:view alone reads orders.
	ov := c.NewKey(t, tn.ID, "orders:view")
	c.Do(t, "GET", tPath(tn.ID, "/orders/", oid), ov, nil).Expect(t, http.StatusOK)

	// Another tenant's order, batch: 404; unparseable ids: 404.
	c.Do(t, "GET", tPath(other.ID, "/orders/", oid), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", tPath(other.ID, "/orders/", oid, "/void"), other.Key, map[string]any{}).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", tPath(other.ID, "/orders/", oid, "/refunds"), other.Key, map[string]any{}).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(other.ID, "/batches/", order["batchId"].(string)), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(tn.ID, "/orders/not-a-uuid"), tn.Key, nil).Expect(t, http.StatusNotFound)
	// A contact of another tenant is not found either.
	b := f.cashOrder(10)
	c.Do(t, "POST", tPath(other.ID, "/funds"), other.Key, map[string]any{"name": "G"}).Expect(t, http.StatusCreated)
	r := c.Do(t, "POST", tPath(other.ID, "/orders"), other.Key, b).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["Donations[0].FundId"]) == 0 && len(e["ContactId"]) == 0 {
		t.Errorf("cross-tenant errors = %v", e)
	}
}

func TestOrdersIdempotency(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn

	b := f.cashOrder(30)
	b["IdempotencyKey"] = "0190a4d6-aaaa-7000-8000-000000000001" // the spec's spelling
	first := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusCreated)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("first response marked replayed")
	}
	again := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b).Expect(t, http.StatusCreated)
	if string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay = %s %v, want %s", again.Body, again.Header, first.Body)
	}
	// Same key, different body: refused on purpose.
	b2 := f.cashOrder(31)
	b2["idempotencyKey"] = b["IdempotencyKey"]
	r := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, b2).Expect(t, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "Order.IdempotencyKeyReused") && !strings.Contains(string(r.Body), "idempotency key") {
		t.Errorf("reuse = %s", r.Body)
	}
	// The header works too, and keys are per tenant.
	h := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(5), "Idempotency-Key", "hdr-1").Expect(t, http.StatusCreated)
	h2 := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(5), "Idempotency-Key", "hdr-1").Expect(t, http.StatusCreated)
	if string(h.Body) != string(h2.Body) || h2.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("header replay differs")
	}
	// A failed request gives its key back.
	bad := f.cashOrder(5)
	bad["contactId"] = 0
	bad["idempotencyKey"] = "k-bad"
	c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, bad).Expect(t, http.StatusBadRequest)
	good := f.cashOrder(5)
	good["idempotencyKey"] = "k-bad"
	c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, good).Expect(t, http.StatusCreated)

	// 50 concurrent requests with one key: one order; every answer is the
	// stored one or a retryable 409.
	race := f.cashOrder(7)
	race["idempotencyKey"] = "race-key"
	var wg sync.WaitGroup
	bodies := make([]*apptest.Response, 50)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, race)
		}()
	}
	wg.Wait()
	stored := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, race).Expect(t, http.StatusCreated)
	for i, r := range bodies {
		switch {
		case r.Status == http.StatusCreated && string(r.Body) == string(stored.Body):
		case r.Status == http.StatusConflict:
		default:
			t.Errorf("racer %d: %d %s", i, r.Status, r.Body)
		}
	}
	var n int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT count(*) FROM orders.orders WHERE tenant_id = $1 AND total_minor = 700`, tn.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d orders recorded for one key", n)
	}
}

func TestOrdersItemsStockAndBatches(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	stock := func() float64 {
		return c.Do(t, "GET", invPath(tn.ID, "/", f.item), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["stockOnHand"].(float64)
	}
	// Mixed order: 2 totes at 25.00 (FMV 10.00) plus a 20.00 gift.
	body := map[string]any{
		"contactId": f.contactID, "currency": "USD",
		"items":           []any{map[string]any{"itemId": f.item, "quantity": 2}},
		"donations":       []any{map[string]any{"fundId": f.fund, "amount": 20}},
		"shippingAddress": map[string]any{"line1": "2 Elm St", "city": "Springfield", "postalCode": "02134", "country": "US"},
		"payments":        []any{map[string]any{"paymentMethod": "External", "amount": 70, "reference": "stripe:pi_123"}},
	}
	r := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated)
	for _, frag := range []string{`"itemSubtotal":50.00`, `"totalAmount":70.00`, `"deductibleAmount":50.00`, `"unitPrice":25.00`, `"fairMarketValue":10.00`} {
		if !strings.Contains(string(r.Body), frag) {
			t.Errorf("item order %s lacks %s", r.Body, frag)
		}
	}
	if s := stock(); s != 8 {
		t.Errorf("stock after order = %v, want 8", s)
	}
	oid := r.Map(t)["id"].(string)

	// Insufficient stock: 400 under the line's path, nothing recorded.
	body["items"] = []any{map[string]any{"itemId": f.item, "quantity": 9}}
	body["payments"] = []any{map[string]any{"paymentMethod": "Cash", "amount": 245}}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["Items[0].Quantity"]) != 1 || !strings.Contains(e["Items[0].Quantity"][0], "Inventory.InsufficientStock") {
		t.Errorf("insufficient stock errors = %v", e)
	}
	if s := stock(); s != 8 {
		t.Errorf("stock after refused order = %v, want 8", s)
	}
	// Void releases the stock.
	c.Do(t, "POST", tPath(tn.ID, "/orders/", oid, "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if s := stock(); s != 10 {
		t.Errorf("stock after void = %v, want 10", s)
	}
	// A full refund releases it too; a partial one does not.
	body["items"] = []any{map[string]any{"itemId": f.item, "quantity": 1}}
	body["payments"] = []any{map[string]any{"paymentMethod": "Cash", "amount": 45}}
	oid = c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", oid, "/refunds"), tn.Key, map[string]any{"amount": 5}).Expect(t, http.StatusCreated)
	if s := stock(); s != 9 {
		t.Errorf("stock after partial refund = %v, want 9", s)
	}
	c.Do(t, "POST", tPath(tn.ID, "/orders/", oid, "/refunds"), tn.Key, map[string]any{}).Expect(t, http.StatusCreated)
	if s := stock(); s != 10 {
		t.Errorf("stock after full refund = %v, want 10", s)
	}

	// Batches: the daily one has the orders; a closed batch refuses orders.
	var batches struct {
		Items      []map[string]any
		TotalCount int
	}
	c.Do(t, "GET", tPath(tn.ID, "/batches"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &batches)
	if batches.TotalCount != 1 || batches.Items[0]["isDaily"] != true || batches.Items[0]["orderCount"] != float64(2) {
		t.Errorf("batches = %+v", batches)
	}
	nb := c.Do(t, "POST", tPath(tn.ID, "/batches"), tn.Key, map[string]any{"name": "Gala night"}).Expect(t, http.StatusCreated).Map(t)
	cash := f.cashOrder(12)
	cash["batchId"] = nb["id"]
	got := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, cash).Expect(t, http.StatusCreated).Map(t)
	if got["batchId"] != nb["id"] {
		t.Errorf("batchId = %v, want %v", got["batchId"], nb["id"])
	}
	closed := c.Do(t, "POST", tPath(tn.ID, "/batches/", nb["id"].(string), "/close"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)
	if !strings.Contains(string(closed.Body), `"state":"Closed"`) || !strings.Contains(string(closed.Body), `"total":12.00`) {
		t.Errorf("closed batch = %s", closed.Body)
	}
	r = c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, cash).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e) != 1 || len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Order.BatchClosed") {
		t.Errorf("closed batch errors = %v", e)
	}
}

func TestOrdersCardPayments(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	without := newOrderFixture(t, c)
	card := func(f orderFixture, token string) map[string]any {
		b := f.cashOrder(15)
		b["payments"] = []any{map[string]any{"paymentMethod": "Card", "amount": 15, "paymentToken": token}}
		return b
	}
	// No payment-processor feature: 403.
	c.Do(t, "POST", tPath(without.tn.ID, "/orders"), without.tn.Key, card(without, "tok_visa")).Expect(t, http.StatusForbidden)

	f := newOrderFixture(t, c, "api-access:enabled", "payment-processor:enabled")
	r := c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, card(f, "tok_visa")).Expect(t, http.StatusCreated)
	if !strings.Contains(string(r.Body), `"paymentStatus":"Captured"`) || !strings.Contains(string(r.Body), `"processorReference":"test_ch_`) {
		t.Errorf("card order = %s", r.Body)
	}
	r = c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, card(f, "tok_decline")).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Payment.DeclinedByProcessor") {
		t.Errorf("decline errors = %v", e)
	}
	// ACH goes through the same processor: accepted, and declined with
	// the documented test token.
	ach := func(token string) map[string]any {
		b := f.cashOrder(15)
		b["payments"] = []any{map[string]any{"paymentMethod": "Ach", "amount": 15, "paymentToken": token}}
		return b
	}
	r = c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, ach("ach_checking")).Expect(t, http.StatusCreated)
	if !strings.Contains(string(r.Body), `"paymentMethod":"Ach"`) || !strings.Contains(string(r.Body), `"paymentStatus":"Captured"`) {
		t.Errorf("ach order = %s", r.Body)
	}
	r = c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, ach("ach_decline_insufficient")).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e[""]) != 1 || !strings.HasPrefix(e[""][0], "Payment.DeclinedByProcessor") {
		t.Errorf("ach decline errors = %v", e)
	}
	var page struct{ TotalCount int }
	c.Do(t, "GET", tPath(f.tn.ID, "/orders"), f.tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 2 {
		t.Errorf("%d orders after two declines, want 2", page.TotalCount)
	}
}

// TestOrderSavesBillingAddressToContact checks saveBillingToContact: the
// order's billing address lands on the contact through the contacts
// service's directory RPC, with the contact's audit row.
func TestOrderSavesBillingAddressToContact(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	b := f.cashOrder(25)
	b["billingAddress"] = map[string]any{"line1": "1 Library Way", "city": "Springfield", "stateProvince": "IL", "postalCode": "62701", "country": "US"}
	b["saveBillingToContact"] = true
	c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, b).Expect(t, http.StatusCreated)
	contact := c.Do(t, "GET", tPath(f.tn.ID, fmt.Sprintf("/contacts/%d", int64(f.contactID))), f.tn.Key, nil).Expect(t, http.StatusOK)
	if !strings.Contains(string(contact.Body), `"line1":"1 Library Way"`) || !strings.Contains(string(contact.Body), `"postalCode":"62701"`) {
		t.Errorf("contact after saveBillingToContact = %s", contact.Body)
	}
	audit := c.Do(t, "GET", tPath(f.tn.ID, fmt.Sprintf("/contacts/%d/audit-logs", int64(f.contactID))), f.tn.Key, nil).Expect(t, http.StatusOK)
	if !strings.Contains(string(audit.Body), "contact.updated") {
		t.Errorf("no contact.updated audit row: %s", audit.Body)
	}
}

// TestGivingSummaryOnDashboard checks the orders service's giving summary
// through the contact dashboard: a partial refund counts net, a voided gift
// not at all, and money is reported per currency.
func TestGivingSummaryOnDashboard(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	big := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(100)).Expect(t, http.StatusCreated).Map(t)
	c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(50)).Expect(t, http.StatusCreated)
	voided := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(30)).Expect(t, http.StatusCreated).Map(t)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", big["id"].(string), "/refunds"), tn.Key, map[string]any{"amount": 20}).Expect(t, http.StatusCreated)
	c.Do(t, "POST", tPath(tn.ID, "/orders/", voided["id"].(string), "/void"), tn.Key, map[string]any{}).Expect(t, http.StatusOK)

	r := c.Do(t, "GET", tPath(tn.ID, fmt.Sprintf("/contacts/%d/dashboard", int64(f.contactID))), tn.Key, nil).Expect(t, http.StatusOK)
	var dash struct {
		GivingTotals []struct {
			Currency      string
			LifetimeTotal json.Number
			GiftCount     int
			ThisYear      json.Number
			LastYear      json.Number
		}
		RecentOrders []map[string]any
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("dashboard %s: %v", r.Body, err)
	}
	if len(dash.GivingTotals) != 1 {
		t.Fatalf("giving totals = %+v", dash.GivingTotals)
	}
	g := dash.GivingTotals[0]
	if g.Currency != "USD" || g.LifetimeTotal != "130.00" || g.GiftCount != 2 || g.ThisYear != "130.00" || g.LastYear != "0.00" {
		t.Errorf("giving total = %+v, want USD 130.00 over 2 gifts, 130.00 this year, 0.00 last year", g)
	}
	if len(dash.RecentOrders) == 0 {
		t.Error("no recent orders on the dashboard")
	}
}
