package e2e

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/pdftext"
)

// pdfTextPages is a PDF's text as pdftotext -layout reads it, spaces
// collapsed, and its page count.
func pdfTextPages(t *testing.T, body []byte) (string, int) {
	t.Helper()
	return strings.Join(strings.Fields(pdftext.Text(t, body, "-layout")), " "), pdftext.Pages(t, body)
}

// TestShipmentDocuments reads a packing slip back with pdftotext, prints
// 120 slips in one PDF, sums a pick list, sees shipment.updated delivered
// signed, and shows an item order whose handoff failed getting its
// shipment from the sweeper (the outbox).
func TestShipmentDocuments(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc), "ALMONER_ORDERS_RUNNER_INTERVAL", "50ms")})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	f := newShipFixture(t, c, tn)
	_, secret := createWebhook(t, c, tn, rc.srv.URL+"/hook", "shipment.updated")
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	tote := invItem("TOTE-" + tn.ID[:8])
	tote["location"] = "A-01"
	c.Do(t, "PUT", invPath(tn.ID, "/", f.item), tn.Key, tote).Expect(t, http.StatusOK)

	a, b := f.itemOrder(t, 2, 1), f.itemOrder(t, 1, 0)
	slipText(t, f, a)

	// shipment.updated, signed, naming the status change.
	f.post(t, b, "pack", nil, http.StatusOK)
	got := rc.waitFor(t, 1)
	body := checkSigned(t, got[0], secret, "shipment.updated")
	data, _ := body["data"].(map[string]any)
	changes, _ := data["changes"].(map[string]any)
	if data["entity_id"] != b || changes["status"] == nil {
		t.Errorf("shipment.updated = %s", got[0].body)
	}

	pickList(t, f)
	manySlips(t, f)
	handoffLeftToSweeper(t, f)
}

// slipText reads order a's packing slip back.
func slipText(t *testing.T, f shipFixture, a string) {
	t.Helper()
	r := f.c.Do(t, "GET", shipPath(f.tn.ID, "/", a, "/packing-slip"), f.tn.Key, nil).Expect(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/pdf" || !bytes.HasPrefix(r.Body, []byte("%PDF")) {
		t.Fatalf("packing slip Content-Type %q", ct)
	}
	text, pages := pdfTextPages(t, r.Body)
	order := f.c.Do(t, "GET", tPath(f.tn.ID, "/orders/", a), f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	number := strconv.FormatFloat(order["orderNumber"].(float64), 'f', 0, 64)
	for _, want := range []string{"Packing slip", "Société d'Entraide Françoise", "12 Rue de l'Église", "Montréal", "Ship to:", "2 Elm St",
		"Springfield", "Order number " + number, "TOTE-" + f.tn.ID[:8], "Tote bag", "MUG-" + f.tn.ID[:8], "Coffee mug"} {
		if !strings.Contains(text, want) {
			t.Errorf("packing slip lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`Tote bag TOTE-\S+ 2\b`).MatchString(text) || !regexp.MustCompile(`Coffee mug 1\b`).MatchString(text) {
		t.Errorf("packing slip quantities:\n%s", text)
	}
	if strings.Contains(text, "25.00") || strings.Contains(text, "USD") || pages != 1 {
		t.Errorf("packing slip shows a price or has %d pages:\n%s", pages, text)
	}
	f.c.Do(t, "GET", shipPath(f.tn.ID, "/", a, "/packing-slip"), f.c.NewKey(t, f.tn.ID, "orders:view"), nil).Expect(t, http.StatusForbidden)
	other := f.c.NewTenant(t)
	f.c.Do(t, "GET", shipPath(other.ID, "/", a, "/packing-slip"), other.Key, nil).Expect(t, http.StatusNotFound)
}

// pickList checks the pending shipments' sums (order a: 2 totes and a
// mug, order b packed), sorted by SKU, in CSV and Excel.
func pickList(t *testing.T, f shipFixture) {
	t.Helper()
	r := f.c.Do(t, "GET", shipPath(f.tn.ID, "/pick-list")+"?status=pending&format=csv", f.tn.Key, nil).Expect(t, http.StatusOK)
	want := "SKU,Name,Quantity,Shipments,Location\nMUG-" + f.tn.ID[:8] + ",Coffee mug,1,1,\nTOTE-" + f.tn.ID[:8] + ",Tote bag TOTE-" + f.tn.ID[:8] + ",2,1,A-01\n"
	if string(r.Body) != want {
		t.Errorf("pick list =\n%s\nwant\n%s", r.Body, want)
	}
	x := f.c.Do(t, "GET", shipPath(f.tn.ID, "/pick-list")+"?format=xlsx", f.tn.Key, nil).Expect(t, http.StatusOK)
	if !bytes.HasPrefix(x.Body, []byte("PK")) {
		t.Errorf("xlsx pick list starts %q", x.Body[:min(4, len(x.Body))])
	}
	f.c.Do(t, "GET", shipPath(f.tn.ID, "/pick-list")+"?format=pdf", f.tn.Key, nil).Expect(t, http.StatusBadRequest)
	// A name a spreadsheet would run stays text.
	evil := invItem("EVIL-" + f.tn.ID[:8])
	evil["name"] = "=HYPERLINK(\"http://x\")"
	id := invCreate(t, f.c, f.tn, evil)["id"].(string)
	f.c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, map[string]any{
		"contactId": f.contactID, "currency": "USD", "items": []any{map[string]any{"itemId": id, "quantity": 1}},
		"shippingAddress": map[string]any{"line1": "2 Elm St", "city": "Springfield", "postalCode": "02134", "country": "US"},
		"payments":        []any{map[string]any{"paymentMethod": "Cash", "amount": 25}},
	}).Expect(t, http.StatusCreated)
	r = f.c.Do(t, "GET", shipPath(f.tn.ID, "/pick-list"), f.tn.Key, nil).Expect(t, http.StatusOK)
	if !strings.Contains(string(r.Body), "EVIL-"+f.tn.ID[:8]+",\"'=HYPERLINK(\"\"http://x\"\")\",1,1,") {
		t.Errorf("formula not neutralized:\n%s", r.Body)
	}
}

// manySlips prints 120 pending shipments in one PDF, in order number
// order, and refuses 2,001 (the 2,000-slip document is make bench's:
// 500 orders through the API cost a minute of CI under -race).
func manySlips(t *testing.T, f shipFixture) {
	t.Helper()
	item := invItem("BULK-" + f.tn.ID[:8])
	item["trackStock"] = false
	id := invCreate(t, f.c, f.tn, item)["id"].(string)
	batch := f.c.Do(t, "POST", tPath(f.tn.ID, "/batches"), f.tn.Key, map[string]any{"name": "Mailing"}).Expect(t, http.StatusCreated).Map(t)["id"]
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 30 {
				f.c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, map[string]any{
					"contactId": f.contactID, "currency": "USD", "batchId": batch, "items": []any{map[string]any{"itemId": id, "quantity": 1 + w}},
					"shippingAddress": map[string]any{"line1": "2 Elm St", "city": "Springfield", "postalCode": "02134", "country": "US"},
					"payments":        []any{map[string]any{"paymentMethod": "Cash", "amount": 25 * (1 + w)}},
				}).Expect(t, http.StatusCreated)
			}
		})
	}
	wg.Wait()
	r := f.c.Do(t, "POST", shipPath(f.tn.ID, "/packing-slips"), f.tn.Key, map[string]any{"status": "pending", "batchId": batch}).Expect(t, http.StatusOK)
	text, pages := pdfTextPages(t, r.Body)
	if pages != 120 || strings.Count(text, "Packing slip") != 120 {
		t.Errorf("120 slips: %d pages, %d titles", pages, strings.Count(text, "Packing slip"))
	}
	nums := regexp.MustCompile(`Order number (\d+)`).FindAllStringSubmatch(text, -1)
	for i := 1; i < len(nums); i++ {
		if a, _ := strconv.Atoi(nums[i-1][1]); func() bool { b, _ := strconv.Atoi(nums[i][1]); return a >= b }() {
			t.Fatalf("slips out of order number order at %d: %s then %s", i, nums[i-1][1], nums[i][1])
		}
	}
	ids := make([]string, 2001)
	for i := range ids {
		ids[i] = "01a2008e-8a4c-7b7e-9c53-2f6e0c1d4a10"
	}
	p := f.c.Do(t, "POST", shipPath(f.tn.ID, "/packing-slips"), f.tn.Key, map[string]any{"shipmentIds": ids}).Expect(t, http.StatusBadRequest)
	if !strings.Contains(string(p.Body), "2001 shipments") {
		t.Errorf("2,001 slips: %s", p.Body)
	}
}

// handoffLeftToSweeper blocks inventory's shipment writes past the
// handoff's time limit while an item order is recorded: the order is
// recorded, its request stays in the outbox, and the sweeper creates the
// shipment once inventory answers again.
func handoffLeftToSweeper(t *testing.T, f shipFixture) {
	t.Helper()
	conn := dbConn(t, f.c.DatabaseURL)
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE inventory.shipments IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	oid := f.itemOrder(t, 1, 0)
	var waiting int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM orders.shipment_requests WHERE order_id = $1`, oid).Scan(&waiting); err != nil || waiting != 1 {
		t.Errorf("outbox rows of the order = %d, %v; want 1", waiting, err)
	}
	f.c.Do(t, "GET", shipPath(f.tn.ID, "/", oid), f.tn.Key, nil).Expect(t, http.StatusNotFound)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for f.c.Do(t, "GET", shipPath(f.tn.ID, "/", oid), f.tn.Key, nil).Status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not deliver the shipment request in 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The sweeper deletes the request once inventory has answered: a
	// moment after the shipment shows (longer behind a pooler).
	for {
		err := conn.QueryRow(ctx, `SELECT count(*) FROM orders.shipment_requests WHERE order_id = $1`, oid).Scan(&waiting)
		if err == nil && waiting == 0 {
			return
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("outbox rows after delivery = %d, %v", waiting, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
