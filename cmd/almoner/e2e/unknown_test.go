package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// expectUnknown requires a 400 whose only error is one message under
// field saying that the property or query parameter is not the request's.
func expectUnknown(t *testing.T, r *apptest.Response, field, what string) {
	t.Helper()
	p := expectProblem(t, r, http.StatusBadRequest)
	want := fmt.Sprintf("'%s' is not a %s of this request.", field[strings.LastIndexAny(field, ".]")+1:], what)
	if len(p.Errors) != 1 || len(p.Errors[field]) != 1 || p.Errors[field][0] != want {
		t.Errorf("errors %v, want only %q under %s", p.Errors, want, field)
	}
}

// TestUnknownPropertiesAreRefused: the four ways a typo moved money or lost
// data are 400s under the misspelt name, and nothing happens: the refund
// is not made, no order is recorded without its schedule, no contact is
// created without its first name, the list is not answered unfiltered.
func TestUnknownPropertiesAreRefused(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(500)).Expect(t, http.StatusCreated).Map(t)
	orderPath := tPath(tn.ID, "/orders/", order["id"].(string))

	// A refund whose amount is misspelt used to refund the whole 500.00.
	expectUnknown(t, c.Do(t, "POST", orderPath+"/refunds", tn.Key, `{"ammount": 5}`), "Ammount", "property")
	got := c.Do(t, "GET", orderPath, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if got["orderStatus"] != "Completed" || got["refundedAmount"] != float64(0) {
		t.Errorf("after the refused refund: status %v, refunded %v", got["orderStatus"], got["refundedAmount"])
	}

	// An order whose schedules are misspelt used to be recorded without
	// them.
	withSchedule := f.cashOrder(25)
	withSchedule["recurringDonation"] = []any{map[string]any{"fundId": f.fund, "amount": 25, "frequency": "monthly"}}
	expectUnknown(t, c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, withSchedule), "RecurringDonation", "property")
	// Deep inside a line, too.
	itemTypo := map[string]any{"contactId": f.contactID, "items": []any{map[string]any{"itemId": f.item, "quantty": 2}},
		"payments": []any{map[string]any{"paymentMethod": "Cash", "amount": 50}}}
	expectUnknown(t, c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, itemTypo), "Items[0].Quantty", "property")
	if n := c.Do(t, "GET", tPath(tn.ID, "/orders"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["totalCount"]; n != float64(1) {
		t.Errorf("%v orders, want only the first", n)
	}
	if n := c.Do(t, "GET", tPath(tn.ID, "/recurring-donations"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["totalCount"]; n != float64(0) {
		t.Errorf("%v schedules, want none", n)
	}
	if stock := invStock(t, c, tn, f.item); stock != 10 {
		t.Errorf("stock %v after the refused item order, want 10", stock)
	}

	// A contact whose first name is misspelt used to be created without it.
	expectUnknown(t, c.Do(t, "POST", contactsPath(tn.ID), tn.Key,
		map[string]any{"contactType": "Individual", "frstName": "Jane", "lastName": "Typo"}), "FrstName", "property")
	if n := c.Do(t, "GET", contactsPath(tn.ID)+"?search=Typo", tn.Key, nil).Expect(t, http.StatusOK).Map(t)["totalCount"]; n != float64(0) {
		t.Errorf("%v contacts named Typo, want none", n)
	}

	// A misspelt filter used to return every order.
	expectUnknown(t, c.Do(t, "GET", tPath(tn.ID, "/orders?statuss=Voided"), tn.Key, nil), "Statuss", "query parameter")
	// And a parameter on a route that reads none is refused too.
	expectUnknown(t, c.Do(t, "GET", orderPath+"?expand=payments", tn.Key, nil), "Expand", "query parameter")
	// The path's own values cannot come from the query string or the body.
	p := expectProblem(t, c.Do(t, "GET", tPath(tn.ID, "/orders?tenantId="+tn.ID), tn.Key, nil), http.StatusBadRequest)
	if len(p.Errors["TenantId"]) != 1 {
		t.Errorf("tenantId in the query: errors %v", p.Errors)
	}
	p = expectProblem(t, c.Do(t, "POST", orderPath+"/refunds", tn.Key, map[string]any{"orderId": order["id"], "amount": 5}), http.StatusBadRequest)
	if len(p.Errors["OrderId"]) != 1 || !strings.Contains(p.Errors["OrderId"][0], "path") {
		t.Errorf("orderId in the body: errors %v", p.Errors)
	}
	// The filters the document names are the ones read.
	c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(20)).Expect(t, http.StatusCreated)
	list := c.Do(t, "GET", tPath(tn.ID, "/orders?minAmount=100.00&status=Completed&pageSize=5"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if list["totalCount"] != float64(1) {
		t.Errorf("minAmount=100.00: %v orders, want the 500.00 one", list["totalCount"])
	}
}

// withoutKeys returns m without the named properties.
func withoutKeys(m map[string]any, keys ...string) map[string]any {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// TestWhatAGetReturnedCanBePutBack: a contact, an inventory item, a
// webhook, a fund and a saved report read with GET and sent back unchanged
// with PUT are accepted, read-only properties and all, and stay as they
// were.
func TestWhatAGetReturnedCanBePutBack(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")

	spouse := createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "John", "lastName": "Donor"})
	jane := janeBody()
	jane["relationships"] = []any{map[string]any{"relatedContactId": spouse["id"], "relationshipType": "Spouse"}}
	contact := createContact(t, c, tn, jane)
	fund := c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "General", "description": "Where it is needed", "processingFeePercent": 2.9}).
		Expect(t, http.StatusCreated).Map(t)
	item := invCreate(t, c, tn, invItem("ROUND-TRIP"))
	hook := c.Do(t, "POST", tPath(tn.ID, "/webhooks"), tn.Key, map[string]any{"name": "CRM", "url": "https://8.8.8.8/hooks", "eventTypes": []string{"order.created"}, "description": "sync"}).
		Expect(t, http.StatusCreated).Map(t)
	report := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "Top donors", "typeKey": "top-donors", "parameters": map[string]any{"From": "2026-01-01"}}).
		Expect(t, http.StatusCreated).Map(t)

	// getOne reads a resource: by its own GET, or from its list.
	getOne := func(path, list string, id any) map[string]any {
		if list == "" {
			return c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		}
		var items []map[string]any
		c.Do(t, "GET", list, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
		for _, it := range items {
			if it["id"] == id {
				return it
			}
		}
		t.Fatalf("%v not in %s", id, list)
		return nil
	}
	for _, rt := range []struct {
		name, path, list string
		id               any
	}{
		{"contact", contactPath(tn.ID, num(contact["id"])), "", nil},
		{"inventory item", invPath(tn.ID, "/", item["id"].(string)), "", nil},
		{"webhook", tPath(tn.ID, "/webhooks/", hook["id"].(string)), tPath(tn.ID, "/webhooks"), hook["id"]},
		{"fund", tPath(tn.ID, "/funds/", fund["id"].(string)), tPath(tn.ID, "/funds"), fund["id"]},
		{"report", tPath(tn.ID, "/reports/", report["id"].(string)), "", nil},
	} {
		before := getOne(rt.path, rt.list, rt.id)
		after := c.Do(t, "PUT", rt.path, tn.Key, before).Expect(t, http.StatusOK).Map(t)
		if !reflect.DeepEqual(withoutKeys(before, "updatedAt"), withoutKeys(after, "updatedAt")) {
			t.Errorf("%s changed by putting back its GET:\nbefore %v\nafter  %v", rt.name, before, after)
		}
		// A misspelt property next to them is still refused.
		typo := maps.Clone(before)
		typo["nmae"] = "x"
		expectUnknown(t, c.Do(t, "PUT", rt.path, tn.Key, typo), "Nmae", "property")
	}
	// The contact carried its relationships back, names and all.
	if rels := getOne(contactPath(tn.ID, num(contact["id"])), "", nil)["relationships"].([]any); len(rels) != 1 ||
		rels[0].(map[string]any)["relatedContactName"] != "John Donor" {
		t.Errorf("relationships after the round trip: %v", rels)
	}
	// A create takes what a GET of its kind returned, too.
	copied := withoutKeys(getOne(tPath(tn.ID, "/reports/", report["id"].(string)), "", nil), "name")
	copied["name"] = "Top donors (copy)"
	if r := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, copied).Expect(t, http.StatusCreated).Map(t); r["id"] == report["id"] || r["typeKey"] != "top-donors" {
		t.Errorf("copied report = %v", r)
	}
}

// TestReferenceSystemPropertiesAreUnderstood: what integrators of the
// reference system send is read, not refused: a refund's paymentId
// refunds that payment only, a batch's description is kept, and a saved
// report's dataSourceKey and isShared mean what they mean there.
func TestReferenceSystemPropertiesAreUnderstood(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn

	body := map[string]any{"contactId": f.contactID, "donations": []any{map[string]any{"fundId": f.fund, "amount": 500}},
		"payments": []any{map[string]any{"paymentMethod": "Cash", "amount": 300}, map[string]any{"paymentMethod": "Check", "amount": 200, "checkNumber": "1001"}}}
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, body).Expect(t, http.StatusCreated).Map(t)
	other := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(10)).Expect(t, http.StatusCreated).Map(t)
	refunds := tPath(tn.ID, "/orders/", order["id"].(string), "/refunds")
	payments := order["payments"].([]any)
	cash, check := payments[0].(map[string]any), payments[1].(map[string]any)
	otherPayment := other["payments"].([]any)[0].(map[string]any)["id"]

	// The check alone gives back 50.00; the cash payment is untouched.
	o := c.Do(t, "POST", refunds, tn.Key, map[string]any{"paymentId": check["id"], "amount": 50, "reason": "Duplicate check"}).Expect(t, http.StatusCreated).Map(t)
	byID := func(o map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, p := range o["payments"].([]any) {
			out[p.(map[string]any)["id"].(string)] = p.(map[string]any)
		}
		return out
	}
	ps := byID(o)
	if ps[check["id"].(string)]["refundedAmount"] != float64(50) || ps[check["id"].(string)]["paymentStatus"] != "PartiallyRefunded" ||
		ps[cash["id"].(string)]["refundedAmount"] != float64(0) || ps[cash["id"].(string)]["paymentStatus"] != "Captured" ||
		o["refundedAmount"] != float64(50) || o["orderStatus"] != "PartiallyRefunded" {
		t.Errorf("after refunding 50.00 of the check: %v", o)
	}
	// More than the check has left is the over-refund rule, for that
	// payment; another order's payment or a made-up id is no payment of
	// this order; nothing is refunded by any of them.
	for _, tc := range []struct {
		body         map[string]any
		field, words string
	}{
		{map[string]any{"paymentId": check["id"], "amount": 200}, "Amount", "Order.RefundExceedsRefundable: At most 150.00 can still be refunded from this payment."},
		{map[string]any{"paymentId": otherPayment, "amount": 1}, "PaymentId", "'PaymentId' is not a payment of this order."},
		{map[string]any{"paymentId": "not-a-payment"}, "PaymentId", "'PaymentId' is not a payment of this order."},
	} {
		p := expectProblem(t, c.Do(t, "POST", refunds, tn.Key, tc.body), http.StatusBadRequest)
		if len(p.Errors[tc.field]) != 1 || p.Errors[tc.field][0] != tc.words {
			t.Errorf("%v: errors %v, want %q under %s", tc.body, p.Errors, tc.words, tc.field)
		}
	}
	// Without an amount, the payment's remainder: the cash, 300.00.
	o = c.Do(t, "POST", refunds, tn.Key, map[string]any{"paymentId": cash["id"]}).Expect(t, http.StatusCreated).Map(t)
	ps = byID(o)
	if ps[cash["id"].(string)]["refundedAmount"] != float64(300) || ps[cash["id"].(string)]["paymentStatus"] != "Refunded" ||
		ps[check["id"].(string)]["refundedAmount"] != float64(50) || o["refundedAmount"] != float64(350) || o["orderStatus"] != "PartiallyRefunded" {
		t.Errorf("after refunding the cash: %v", o)
	}
	if got := c.Do(t, "GET", tPath(tn.ID, "/orders/", other["id"].(string)), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["refundedAmount"] != float64(0) {
		t.Errorf("the other order was refunded: %v", got)
	}

	// A batch keeps its description.
	batch := c.Do(t, "POST", tPath(tn.ID, "/batches"), tn.Key, map[string]any{"name": "Gala night", "description": "Tickets and pledges"}).
		Expect(t, http.StatusCreated).Map(t)
	if batch["description"] != "Tickets and pledges" {
		t.Errorf("created batch = %v", batch)
	}
	if got := c.Do(t, "GET", tPath(tn.ID, "/batches/", batch["id"].(string)), tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["description"] != "Tickets and pledges" {
		t.Errorf("batch = %v", got)
	}
	p := expectProblem(t, c.Do(t, "POST", tPath(tn.ID, "/batches"), tn.Key, map[string]any{"name": "Long", "description": strings.Repeat("x", 2001)}), http.StatusBadRequest)
	if len(p.Errors["Description"]) != 1 {
		t.Errorf("a 2001-character description: errors %v", p.Errors)
	}

	// A report saved by its reference-system type name.
	report := c.Do(t, "POST", tPath(tn.ID, "/reports"), tn.Key, map[string]any{"name": "By fund", "dataSourceKey": "donations-by-fund", "isShared": true}).
		Expect(t, http.StatusCreated).Map(t)
	if report["typeKey"] != "donations-by-fund" || report["dataSourceKey"] != "donations-by-fund" || report["isShared"] != true {
		t.Errorf("report = %v", report)
	}
	reportPath := tPath(tn.ID, "/reports/", report["id"].(string))
	if r := c.Do(t, "PUT", reportPath, tn.Key, map[string]any{"name": "By fund", "dataSourceKey": "top-donors"}).Expect(t, http.StatusOK).Map(t); r["typeKey"] != "top-donors" {
		t.Errorf("after a PUT naming dataSourceKey: %v", r)
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "x", "typeKey": "top-donors", "dataSourceKey": "donations-by-fund"}, "DataSourceKey"},
		{map[string]any{"name": "x", "typeKey": "top-donors", "isShared": false}, "IsShared"},
	} {
		for _, method := range []string{"POST", "PUT"} {
			path := tPath(tn.ID, "/reports")
			if method == "PUT" {
				path = reportPath
			}
			p := expectProblem(t, c.Do(t, method, path, tn.Key, tc.body), http.StatusBadRequest)
			if len(p.Errors[tc.field]) != 1 {
				t.Errorf("%s %v: errors %v, want one under %s", method, tc.body, p.Errors, tc.field)
			}
		}
	}
	if r := c.Do(t, "GET", reportPath, tn.Key, nil).Expect(t, http.StatusOK).Map(t); r["typeKey"] != "top-donors" {
		t.Errorf("a refused PUT changed the report: %v", r)
	}
}
