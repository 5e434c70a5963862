package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/authctx"
)

func invPath(tenantID string, rest ...string) string {
	return "/api/tenants/" + tenantID + "/inventory" + strings.Join(rest, "")
}

// invItem is a valid create body; change it per test.
func invItem(sku string) map[string]any {
	return map[string]any{
		"sku": sku, "name": "Tote bag " + sku, "description": "Canvas, with the library's logo",
		"price": 25.00, "currency": "USD", "fairMarketValue": 10, "trackStock": true, "stockOnHand": 10, "category": "Bags",
	}
}

func invCreate(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, body any) map[string]any {
	t.Helper()
	return c.Do(t, "POST", invPath(tn.ID), tn.Key, body).Expect(t, http.StatusCreated).Map(t)
}

// invProblem is a problem document's fields the tests look at.
type invProblem struct {
	Type, Title string
	Status      int
	Errors      map[string][]string
}

func TestInventoryItemLifecycle(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)

	r := c.Do(t, "POST", invPath(tn.ID), tn.Key, `{"sku":"TOTE-1","name":"Tote bag","description":"Canvas","price":25,
		"currency":"USD","fairMarketValue":10.5,"trackStock":true,"stockOnHand":10,"category":"Bags"}`).Expect(t, http.StatusCreated)
	created := r.Map(t)
	want := "active,category,createdAt,currency,description,fairMarketValue,id,location,name,price,sku,stockOnHand,trackStock,updatedAt"
	if got := strings.Join(sortedKeys(created), ","); got != want {
		t.Errorf("item keys = %s, want %s", got, want)
	}
	// Amounts are JSON numbers with the currency's two decimals.
	for _, frag := range []string{`"price":25.00`, `"fairMarketValue":10.50`, `"stockOnHand":10`, `"active":true`, `"trackStock":true`} {
		if !strings.Contains(string(r.Body), frag) {
			t.Errorf("create body %s lacks %s", r.Body, frag)
		}
	}
	id := created["id"].(string)
	if len(id) != 36 || id[14] != '7' || !strings.HasSuffix(created["createdAt"].(string), "Z") {
		t.Errorf("id %q (want a UUIDv7), createdAt %v", id, created["createdAt"])
	}

	got := c.Do(t, "GET", invPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if fmt.Sprint(got) != fmt.Sprint(created) {
		t.Errorf("get = %v, want %v", got, created)
	}

	// PUT replaces every editable field: what it omits takes the create
	// defaults (no description, no category, fairMarketValue = price).
	r = c.Do(t, "PUT", invPath(tn.ID, "/", id), tn.Key, map[string]any{
		"sku": "TOTE-1", "name": "Tote bag, large", "price": 30, "trackStock": true, "stockOnHand": 7, "active": false,
	}).Expect(t, http.StatusOK)
	updated := r.Map(t)
	if updated["name"] != "Tote bag, large" || updated["description"] != "" || updated["category"] != "" ||
		updated["active"] != false || updated["stockOnHand"] != float64(7) || updated["currency"] != "USD" ||
		!strings.Contains(string(r.Body), `"price":30.00`) || !strings.Contains(string(r.Body), `"fairMarketValue":30.00`) {
		t.Errorf("updated = %s", r.Body)
	}
	if updated["createdAt"] != created["createdAt"] || mustTime(t, updated["updatedAt"].(string)).Before(mustTime(t, created["updatedAt"].(string))) {
		t.Errorf("timestamps: created %v → %v, updated %v → %v", created["createdAt"], updated["createdAt"], created["updatedAt"], updated["updatedAt"])
	}

	// The list shows stock and pricing in the standard envelope.
	var page struct {
		Items          []map[string]any
		TotalCount     int
		Page, PageSize int
	}
	lr := c.Do(t, "GET", invPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	lr.JSON(t, &page)
	if got := strings.Join(sortedKeys(lr.Map(t)), ","); got != "items,page,pageSize,totalCount" {
		t.Errorf("envelope keys = %s", got)
	}
	if page.TotalCount != 1 || page.Page != 1 || page.PageSize != 20 || len(page.Items) != 1 || page.Items[0]["stockOnHand"] != float64(7) {
		t.Errorf("list = %s", lr.Body)
	}

	// Unknown, unparseable: 404 for every verb.
	for _, path := range []string{invPath(tn.ID, "/0190a4d6-0000-7000-8000-000000000000"), invPath(tn.ID, "/not-a-uuid")} {
		c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusNotFound)
		c.Do(t, "PUT", path, tn.Key, invItem("X")).Expect(t, http.StatusNotFound)
		// A missing item is 404 even when the body is also wrong.
		c.Do(t, "PUT", path, tn.Key, map[string]any{"sku": ""}).Expect(t, http.StatusNotFound)
	}

	// Every change left its audit row and event, updates with their changes.
	conn := dbConn(t, c.DatabaseURL)
	rows, err := conn.Query(context.Background(), `SELECT event, coalesce(changes::text, ''), actor FROM audit.events
		WHERE tenant_id = $1 AND entity_type = 'InventoryItem' AND entity_id = $2 ORDER BY id`, tn.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct{ event, changes, actor string }
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ev, error) {
		var e ev
		return e, r.Scan(&e.event, &e.changes, &e.actor)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].event != "inventory_item.created" || events[1].event != "inventory_item.updated" {
		t.Fatalf("events = %+v", events)
	}
	for _, frag := range []string{`"name": {"new": "Tote bag, large", "old": "Tote bag"}`, `"price": {"new": 30.00, "old": 25.00}`,
		`"active": {"new": false, "old": true}`, `"stockOnHand": {"new": 7, "old": 10}`} {
		if !strings.Contains(events[1].changes, frag) {
			t.Errorf("changes %s lack %s", events[1].changes, frag)
		}
	}
	if strings.Contains(events[1].changes, `"sku"`) || !strings.HasPrefix(events[0].actor, "api-key:ak_test_") {
		t.Errorf("changes %s, actor %s", events[1].changes, events[0].actor)
	}
}

func TestInventoryListFilters(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	for _, x := range []struct {
		sku, name, category string
		active              bool
	}{
		{"TOTE-1", "Tote bag", "Bags", true},
		{"TOTE-2", "Canvas tote", "Bags", false},
		{"MUG-1", "Mug", "Kitchen", true},
		{"CAP-1", "Cap", "", true},
		{"PIN-1", "Enamel pin", "", true},
	} {
		body := invItem(x.sku)
		body["name"], body["category"], body["active"] = x.name, x.category, x.active
		invCreate(t, c, tn, body)
	}
	cases := []struct {
		query     string
		wantSKUs  string
		wantTotal int
		page      int
		pageSize  int
	}{
		{"", "TOTE-2,CAP-1,PIN-1,MUG-1,TOTE-1", 5, 1, 20},
		{"?active=true", "CAP-1,PIN-1,MUG-1,TOTE-1", 4, 1, 20},
		{"?active=false", "TOTE-2", 1, 1, 20},
		{"?category=bags", "TOTE-2,TOTE-1", 2, 1, 20},
		{"?search=TOTE", "TOTE-2,TOTE-1", 2, 1, 20},
		{"?search=mug-", "MUG-1", 1, 1, 20},
		{"?Search=pin&Active=true", "PIN-1", 1, 1, 20},
		{"?search=zzz", "", 0, 1, 20},
		{"?page=2&pageSize=2", "PIN-1,MUG-1", 5, 2, 2},
		{"?page=3&pageSize=2", "TOTE-1", 5, 3, 2},
		{"?page=9&pageSize=2", "", 5, 9, 2},
		{"?pageSize=100", "TOTE-2,CAP-1,PIN-1,MUG-1,TOTE-1", 5, 1, 100},
	}
	for _, tc := range cases {
		var page struct {
			Items          []map[string]any
			TotalCount     int
			Page, PageSize int
		}
		r := c.Do(t, "GET", invPath(tn.ID)+tc.query, tn.Key, nil).Expect(t, http.StatusOK)
		r.JSON(t, &page)
		var skus []string
		for _, it := range page.Items {
			skus = append(skus, it["sku"].(string))
		}
		if got := strings.Join(skus, ","); got != tc.wantSKUs || page.TotalCount != tc.wantTotal || page.Page != tc.page || page.PageSize != tc.pageSize {
			t.Errorf("%q: %s", tc.query, r.Body)
		}
		if !strings.Contains(string(r.Body), `"items":[`) {
			t.Errorf("%q: items is not an array: %s", tc.query, r.Body)
		}
	}
	for query, field := range map[string]string{
		"?page=0":                             "Page",
		"?page=abc":                           "Page",
		"?pageSize=0":                         "PageSize",
		"?pageSize=101":                       "PageSize",
		"?active=maybe":                       "Active",
		"?search=" + strings.Repeat("s", 201): "Search",
	} {
		var p invProblem
		c.Do(t, "GET", invPath(tn.ID)+query, tn.Key, nil).Expect(t, http.StatusBadRequest).JSON(t, &p)
		if len(p.Errors[field]) == 0 || len(p.Errors) != 1 {
			t.Errorf("%s: errors = %v, want %s", query, p.Errors, field)
		}
	}
}

func TestInventoryValidation(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	invCreate(t, c, tn, invItem("TAKEN-1"))
	// PUTs go to another item, so that TAKEN-1 is a duplicate for both.
	target := invCreate(t, c, tn, invItem("EDIT-ME"))
	with := func(changes map[string]any) map[string]any {
		b := invItem("NEW-1")
		for k, v := range changes {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	cases := []struct {
		name string
		body any
		want map[string]string // property path → part of the message
	}{
		{"malformed JSON", `{"sku": `, map[string]string{"$": "not valid JSON"}},
		{"missing sku", with(map[string]any{"sku": nil}), map[string]string{"Sku": "must not be empty"}},
		{"duplicate sku", with(map[string]any{"sku": "TAKEN-1"}), map[string]string{"Sku": "Inventory.DuplicateSku: An item with the SKU 'TAKEN-1' already exists."}},
		{"duplicate sku in another case", with(map[string]any{"sku": "taken-1"}), map[string]string{"Sku": "Inventory.DuplicateSku"}},
		{"long sku", with(map[string]any{"sku": strings.Repeat("S", 65)}), map[string]string{"Sku": "64 characters"}},
		{"missing name", with(map[string]any{"name": nil}), map[string]string{"Name": "must not be empty"}},
		{"long name", with(map[string]any{"name": strings.Repeat("n", 201)}), map[string]string{"Name": "200 characters"}},
		{"long description", with(map[string]any{"description": strings.Repeat("d", 2001)}), map[string]string{"Description": "2000 characters"}},
		{"long category", with(map[string]any{"category": strings.Repeat("c", 101)}), map[string]string{"Category": "100 characters"}},
		{"missing price", with(map[string]any{"price": nil}), map[string]string{"Price": "must not be empty"}},
		{"negative price", with(map[string]any{"price": -1, "fairMarketValue": nil}), map[string]string{"Price": "greater than or equal to 0"}},
		{"price not a number", with(map[string]any{"price": "ten"}), map[string]string{"Price": "decimal number"}},
		{"price with three decimals", `{"sku":"N","name":"N","price":1.005,"currency":"USD"}`, map[string]string{"Price": "at most 2 decimals for USD"}},
		{"yen with decimals", `{"sku":"N","name":"N","price":500.5,"currency":"JPY"}`, map[string]string{"Price": "at most 0 decimals for JPY"}},
		{"fair market value decimals", `{"sku":"N","name":"N","price":5,"fairMarketValue":0.001}`, map[string]string{"FairMarketValue": "at most 2 decimals"}},
		{"fair market value above price", with(map[string]any{"fairMarketValue": 25.01}), map[string]string{"FairMarketValue": "must not be greater than 'Price'"}},
		{"negative fair market value", with(map[string]any{"fairMarketValue": -1}), map[string]string{"FairMarketValue": "greater than or equal to 0"}},
		{"unknown currency", with(map[string]any{"currency": "XYZ"}), map[string]string{"Currency": "'XYZ' is not an ISO 4217 currency code."}},
		{"negative stock", with(map[string]any{"stockOnHand": -1}), map[string]string{"StockOnHand": "greater than or equal to 0"}},
		{"stock not an integer", with(map[string]any{"stockOnHand": 1.5}), map[string]string{"StockOnHand": "must be an integer"}},
		{"flag not a boolean", with(map[string]any{"trackStock": "yes"}), map[string]string{"TrackStock": "true or false"}},
		{"several at once", map[string]any{"price": -3, "currency": "USD"}, map[string]string{"Sku": "empty", "Name": "empty", "Price": "greater than"}},
	}
	for _, tc := range cases {
		for _, method := range []string{"POST", "PUT"} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				path := invPath(tn.ID)
				if method == "PUT" {
					path += "/" + target["id"].(string)
				}
				r := c.Do(t, method, path, tn.Key, tc.body).Expect(t, http.StatusBadRequest)
				var p invProblem
				r.JSON(t, &p)
				if p.Type != "/errors/validation" || p.Title != "One or more validation errors occurred." || p.Status != 400 {
					t.Errorf("problem = %+v", p)
				}
				if len(p.Errors) != len(tc.want) {
					t.Errorf("errors = %v, want keys %v", p.Errors, tc.want)
				}
				for k, frag := range tc.want {
					if msgs := p.Errors[k]; len(msgs) != 1 || !strings.Contains(msgs[0], frag) {
						t.Errorf("errors[%q] = %v, want it to mention %q", k, msgs, frag)
					}
				}
			})
		}
	}
	// Nothing was created or changed by any of them.
	var page struct{ TotalCount int }
	c.Do(t, "GET", invPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 2 {
		t.Errorf("bad requests created items: %d in the list", page.TotalCount)
	}
	after := c.Do(t, "GET", invPath(tn.ID, "/", target["id"].(string)), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if fmt.Sprint(after) != fmt.Sprint(target) {
		t.Errorf("bad PUTs changed the item: %v", after)
	}
	// An item's own SKU, in any case, is no duplicate of itself.
	body := invItem("edit-me")
	if got := c.Do(t, "PUT", invPath(tn.ID, "/", target["id"].(string)), tn.Key, body).Expect(t, http.StatusOK).Map(t); got["sku"] != "edit-me" {
		t.Errorf("sku = %v", got["sku"])
	}

	// Zero is a price, and the boundaries are inclusive.
	ok := invCreate(t, c, tn, map[string]any{"sku": "FREE", "name": "Sticker", "price": 0, "stockOnHand": 1000000000,
		"fairMarketValue": 0})
	if ok["price"] != float64(0) || ok["trackStock"] != false || ok["active"] != true {
		t.Errorf("free item = %v", ok)
	}
	invCreate(t, c, tn, map[string]any{"sku": "DEAR", "name": "Painting", "price": 1000000000.00, "currency": "usd"})
}

func TestInventoryDefaultCurrency(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	for _, tc := range []struct{ currency, price, want string }{{"EUR", "12.5", `"price":12.50`}, {"JPY", "500", `"price":500,`}} {
		resp, err := c.Admin.CreateTenant(context.Background(), &authv1.CreateTenantRequest{
			Name: "Verein " + tc.currency, Slug: "verein-" + strings.ToLower(tc.currency), DefaultCurrency: tc.currency})
		if err != nil {
			t.Fatal(err)
		}
		tn := apptest.Tenant{ID: resp.GetTenant().GetId()}
		tn.Key = c.NewKey(t, tn.ID, "all")
		r := c.Do(t, "POST", invPath(tn.ID), tn.Key, `{"sku":"A","name":"A","price":`+tc.price+`}`).Expect(t, http.StatusCreated)
		if m := r.Map(t); m["currency"] != tc.currency || !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("%s tenant: %s", tc.currency, r.Body)
		}
		// Decimals are checked against the default currency too.
		if tc.currency == "JPY" {
			c.Do(t, "POST", invPath(tn.ID), tn.Key, `{"sku":"B","name":"B","price":1.5}`).Expect(t, http.StatusBadRequest)
		}
		// A currency given explicitly wins.
		r = c.Do(t, "POST", invPath(tn.ID), tn.Key, `{"sku":"C","name":"C","price":1.5,"currency":"GBP"}`).Expect(t, http.StatusCreated)
		if r.Map(t)["currency"] != "GBP" {
			t.Errorf("explicit currency: %s", r.Body)
		}
	}
}

func TestInventoryScopesAndTenants(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	a, b := c.NewTenant(t), c.NewTenant(t)
	mine := invCreate(t, c, a, invItem("MINE"))
	theirs := invCreate(t, c, b, invItem("THEIRS"))
	allBut := func(missing string) string {
		var s []string
		for _, sc := range []string{"inventory:view", "inventory:create", "inventory:edit", "orders:create", "contacts:view"} {
			if sc != missing {
				s = append(s, sc)
			}
		}
		return c.NewKey(t, a.ID, s...)
	}
	for _, req := range []struct{ method, path, scope string }{
		{"GET", invPath(a.ID), "inventory:view"},
		{"GET", invPath(a.ID, "/", mine["id"].(string)), "inventory:view"},
		{"POST", invPath(a.ID), "inventory:create"},
		{"PUT", invPath(a.ID, "/", mine["id"].(string)), "inventory:edit"},
	} {
		var body any
		if req.method != "GET" {
			body = invItem("NEW")
		}
		r := c.Do(t, req.method, req.path, allBut(req.scope), body).Expect(t, http.StatusForbidden)
		if p := r.Map(t); p["title"] != "Missing required permission: "+req.scope || p["type"] != "/errors/forbidden" {
			t.Errorf("%s %s: %v", req.method, req.path, p)
		}
	}
	// A key with just the one scope is enough.
	c.Do(t, "GET", invPath(a.ID), c.NewKey(t, a.ID, "inventory:view"), nil).Expect(t, http.StatusOK)
	c.Do(t, "POST", invPath(a.ID), c.NewKey(t, a.ID, "inventory:create"), invItem("ONLY-CREATE")).Expect(t, http.StatusCreated)
	c.Do(t, "PUT", invPath(a.ID, "/", mine["id"].(string)), c.NewKey(t, a.ID, "inventory:edit"), invItem("MINE")).Expect(t, http.StatusOK)

	// B's item through A's path with A's key does not exist, for reads
	// and writes alike; A's list does not show it.
	c.Do(t, "GET", invPath(a.ID, "/", theirs["id"].(string)), a.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "PUT", invPath(a.ID, "/", theirs["id"].(string)), a.Key, invItem("HIJACK")).Expect(t, http.StatusNotFound)
	var page struct{ Items []map[string]any }
	c.Do(t, "GET", invPath(a.ID)+"?search=THEIRS", a.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if len(page.Items) != 0 {
		t.Errorf("A's list shows B's item: %v", page.Items)
	}
	// B's path with A's key is 404 before any handler.
	c.Do(t, "GET", invPath(b.ID, "/", theirs["id"].(string)), a.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", invPath(b.ID), a.Key, nil).Expect(t, http.StatusNotFound)
	// B's item is untouched and the SKU it uses stays free in A.
	after := c.Do(t, "GET", invPath(b.ID, "/", theirs["id"].(string)), b.Key, nil).Expect(t, http.StatusOK).Map(t)
	if fmt.Sprint(after) != fmt.Sprint(theirs) {
		t.Errorf("B's item changed: %v", after)
	}
	invCreate(t, c, a, invItem("THEIRS"))

	// The reservation API has no REST route.
	for _, path := range []string{invPath(a.ID, "/reserve"), invPath(a.ID, "/", mine["id"].(string), "/reserve"), "/almoner.inventory.v1.StockReservationService/ReserveStock"} {
		if r := c.Do(t, "POST", path, a.Key, map[string]any{"orderId": "x"}); r.Status < 400 {
			t.Errorf("POST %s = %d", path, r.Status)
		}
	}
}

// invReservations is a gRPC client of the internal reservation API, as the
// orders service holds one: its calls are signed with the cluster's key.
func invReservations(t *testing.T, c *apptest.Cluster) inventoryv1.StockReservationServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(c.ServiceAddr("inventory"), append(c.InternalKey.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return inventoryv1.NewStockReservationServiceClient(conn)
}

// invAs returns a context whose calls assert the principal the orders
// service forwards for a caller of tenantID with the scopes.
func invAs(tenantID string, scopes ...string) context.Context {
	p := authctx.Principal{TenantID: tenantID, KeyID: "0190a4d6-0000-7000-8000-0000000000aa", KeyPrefix: "ak_test_ordersvc", Scopes: scopes}
	return authctx.NewOutgoingContext(context.Background(), p)
}

// invRule returns the typed code and the field of a business-rule status.
func invRule(t *testing.T, err error) (code codes.Code, reason, field, message string) {
	t.Helper()
	st := status.Convert(err)
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.BadRequest:
			if len(d.GetFieldViolations()) == 1 {
				field, message = d.GetFieldViolations()[0].GetField(), d.GetFieldViolations()[0].GetDescription()
			}
		}
	}
	return st.Code(), reason, field, message
}

func invStock(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id string) float64 {
	t.Helper()
	return c.Do(t, "GET", invPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["stockOnHand"].(float64)
}

func TestInventoryConcurrentReservations(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	item := invCreate(t, c, tn, invItem("LIMITED"))["id"].(string)
	client := invReservations(t, c)
	ctx := invAs(tn.ID, "orders:create")

	var (
		mu      sync.Mutex
		ok      int
		refused = map[string]int{}
		wg      sync.WaitGroup
	)
	for i := range 50 {
		wg.Go(func() {
			_, err := client.ReserveStock(ctx, &inventoryv1.ReserveStockRequest{
				TenantId: tn.ID, OrderId: fmt.Sprintf("0190a4d6-0000-7000-8000-%012d", i+1),
				Items: []*inventoryv1.ReserveStockLine{{LineNumber: 1, ItemId: item, Quantity: 1}},
			})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				return
			}
			code, reason, field, _ := invRule(t, err)
			refused[fmt.Sprintf("%s %s %s", code, reason, field)]++
		})
	}
	wg.Wait()
	if ok != 10 || refused["InvalidArgument Inventory.InsufficientStock Items[0].Quantity"] != 40 || len(refused) != 1 {
		t.Errorf("%d reserved, refused %v; want 10 and 40 InsufficientStock", ok, refused)
	}
	if got := invStock(t, c, tn, item); got != 0 {
		t.Errorf("stock = %v, want 0", got)
	}
	var min int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT min(stock_on_hand) FROM inventory.items`).Scan(&min); err != nil || min < 0 {
		t.Errorf("min stock %d, %v", min, err)
	}
}

func TestInventoryReservationAPI(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	other := c.NewTenant(t)
	tote := invCreate(t, c, tn, invItem("TOTE"))["id"].(string) // 25.00, fmv 10.00, stock 10
	mug := invCreate(t, c, tn, map[string]any{"sku": "MUG", "name": "Mug", "price": 12, "trackStock": true, "stockOnHand": 2})["id"].(string)
	ebook := invCreate(t, c, tn, map[string]any{"sku": "EBOOK", "name": "E-book", "price": 5, "fairMarketValue": 0})["id"].(string)
	old := invCreate(t, c, tn, map[string]any{"sku": "OLD", "name": "Old", "price": 1, "active": false})["id"].(string)
	theirs := invCreate(t, c, other, invItem("THEIRS"))["id"].(string)
	client := invReservations(t, c)
	orders := invAs(tn.ID, "orders:create", "orders:void")
	const order = "0190a4d6-0000-7000-8000-00000000a001"
	lines := []*inventoryv1.ReserveStockLine{
		{LineNumber: 1, ItemId: tote, Quantity: 3},
		{LineNumber: 2, ItemId: ebook, Quantity: 1000}, // no stock tracking: never runs out
		{LineNumber: 3, ItemId: mug, Quantity: 2},
	}
	reserve := func(ctx context.Context, order string, lines []*inventoryv1.ReserveStockLine) (*inventoryv1.ReserveStockResponse, error) {
		return client.ReserveStock(ctx, &inventoryv1.ReserveStockRequest{TenantId: tn.ID, OrderId: order, Items: lines})
	}
	stocks := func() string {
		return fmt.Sprint(invStock(t, c, tn, tote), invStock(t, c, tn, mug), invStock(t, c, tn, ebook))
	}

	// All or nothing: the mug line wants more than there is.
	short := append([]*inventoryv1.ReserveStockLine{}, lines...)
	short[2] = &inventoryv1.ReserveStockLine{LineNumber: 3, ItemId: mug, Quantity: 3}
	_, err := reserve(orders, order, short)
	if code, reason, field, msg := invRule(t, err); code != codes.InvalidArgument || reason != "Inventory.InsufficientStock" ||
		field != "Items[2].Quantity" || msg != "Insufficient stock for 'MUG': 2 available, 3 requested." {
		t.Errorf("short reservation: %v %s %s %q", code, reason, field, msg)
	}
	if got := stocks(); got != "10 2 0" {
		t.Errorf("stock after a refused reservation = %s", got)
	}
	for _, tc := range []struct {
		name          string
		lines         []*inventoryv1.ReserveStockLine
		reason, field string
	}{
		{"unknown item", []*inventoryv1.ReserveStockLine{lines[0], {LineNumber: 2, ItemId: "0190a4d6-0000-7000-8000-00000000ffff", Quantity: 1}}, "Inventory.ItemNotFound", "Items[1].ItemId"},
		{"unparseable item", []*inventoryv1.ReserveStockLine{{LineNumber: 1, ItemId: "tote", Quantity: 1}}, "Inventory.ItemNotFound", "Items[0].ItemId"},
		{"another tenant's item", []*inventoryv1.ReserveStockLine{{LineNumber: 1, ItemId: theirs, Quantity: 1}}, "Inventory.ItemNotFound", "Items[0].ItemId"},
		{"inactive item", []*inventoryv1.ReserveStockLine{lines[0], {LineNumber: 2, ItemId: old, Quantity: 1}}, "Inventory.ItemInactive", "Items[1].ItemId"},
	} {
		_, err := reserve(orders, order, tc.lines)
		if code, reason, field, _ := invRule(t, err); code != codes.InvalidArgument || reason != tc.reason || field != tc.field {
			t.Errorf("%s: %v %s %s", tc.name, code, reason, field)
		}
	}
	if got := stocks(); got != "10 2 0" {
		t.Errorf("stock after refused reservations = %s", got)
	}

	// The reservation copies each item's pricing.
	first, err := reserve(orders, order, lines)
	if err != nil {
		t.Fatal(err)
	}
	l := first.GetItems()
	if len(l) != 3 || l[0].GetUnitPrice().GetValue() != "25.00" || l[0].GetFairMarketValue().GetValue() != "10.00" ||
		l[0].GetCurrency() != "USD" || l[0].GetSku() != "TOTE" || !l[0].GetStockMoved() || l[0].GetReplayed() ||
		l[1].GetStockMoved() || l[1].GetUnitPrice().GetValue() != "5.00" || l[1].GetFairMarketValue().GetValue() != "0.00" ||
		l[2].GetFairMarketValue().GetValue() != "12.00" || l[2].GetLineNumber() != 3 || l[2].GetQuantity() != 2 {
		t.Errorf("reserved = %v", l)
	}
	if got := stocks(); got != "7 0 0" {
		t.Errorf("stock after reserving = %s", got)
	}

	// Replaying changes nothing and answers the same, even after a price
	// change.
	c.Do(t, "PUT", invPath(tn.ID, "/", tote), tn.Key, map[string]any{"sku": "TOTE", "name": "Tote", "price": 99, "trackStock": true, "stockOnHand": 7}).Expect(t, http.StatusOK)
	for range 3 {
		again, err := reserve(orders, order, lines)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range again.GetItems() {
			if !x.GetReplayed() || x.GetUnitPrice().GetValue() != l[i].GetUnitPrice().GetValue() {
				t.Errorf("replayed line %d = %v", i, x)
			}
		}
	}
	if got := stocks(); got != "7 0 0" {
		t.Errorf("stock after replays = %s", got)
	}

	// Release line 3 (a refund of the mugs), then the whole order (a void);
	// replays of each change nothing.
	refunds := invAs(tn.ID, "orders:refund")
	for range 2 {
		rel, err := client.ReleaseStock(refunds, &inventoryv1.ReleaseStockRequest{TenantId: tn.ID, OrderId: order, LineNumbers: []int32{3}})
		if err != nil || len(rel.GetLines()) != 1 || rel.GetLines()[0].GetQuantity() != 2 {
			t.Fatalf("release line 3: %v, %v", rel, err)
		}
		if got := stocks(); got != "7 2 0" {
			t.Errorf("stock after releasing line 3 = %s", got)
		}
	}
	for i := range 2 {
		rel, err := client.ReleaseStock(orders, &inventoryv1.ReleaseStockRequest{TenantId: tn.ID, OrderId: order})
		if err != nil || len(rel.GetLines()) != 3 {
			t.Fatalf("void: %v, %v", rel, err)
		}
		if returned := rel.GetLines()[0].GetStockReturned(); returned != (i == 0) || !rel.GetLines()[2].GetReplayed() || rel.GetLines()[1].GetStockReturned() {
			t.Errorf("void %d: %v", i, rel.GetLines())
		}
		if got := stocks(); got != "10 2 0" {
			t.Errorf("stock after void %d = %s", i, got)
		}
	}
	// A late duplicate of the first reservation cannot take stock for the
	// voided order.
	_, err = reserve(orders, order, lines)
	if _, reason, field, _ := invRule(t, err); reason != "Inventory.ReservationReleased" || field != "Items[0]" {
		t.Errorf("late duplicate: %v", err)
	}
	// The same line reserved with other contents is refused.
	const order2 = "0190a4d6-0000-7000-8000-00000000a002"
	if _, err := reserve(orders, order2, lines[:1]); err != nil {
		t.Fatal(err)
	}
	_, err = reserve(orders, order2, []*inventoryv1.ReserveStockLine{{LineNumber: 1, ItemId: tote, Quantity: 4}})
	if _, reason, _, _ := invRule(t, err); reason != "Inventory.ReservationMismatch" {
		t.Errorf("mismatch: %v", err)
	}
	_, err = client.ReleaseStock(orders, &inventoryv1.ReleaseStockRequest{TenantId: tn.ID, OrderId: order2, LineNumbers: []int32{1, 7}})
	if _, reason, field, _ := invRule(t, err); reason != "Inventory.ReservationNotFound" || field != "LineNumbers[1]" {
		t.Errorf("release of an unknown line: %v", err)
	}
	if got := stocks(); got != "7 2 0" {
		t.Errorf("stock = %s", got)
	}

	// Stock movements are updates of the item, with their changes, by the
	// forwarded principal.
	var n int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT count(*) FROM audit.events
		WHERE entity_id = $1 AND event = 'inventory_item.updated' AND changes ? 'stockOnHand' AND actor = 'api-key:ak_test_ordersvc'`, tote).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 { // reserve, void, reserve of order2
		t.Errorf("%d stock movement events for the tote, want 3", n)
	}

	// Authorization: principal, tenant, scope.
	req := &inventoryv1.ReserveStockRequest{TenantId: tn.ID, OrderId: "0190a4d6-0000-7000-8000-00000000a003", Items: lines[:1]}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want codes.Code
	}{
		{"no principal", context.Background(), codes.Unauthenticated},
		{"another tenant", invAs(other.ID, "orders:create"), codes.NotFound},
		{"no orders:create", invAs(tn.ID, "orders:void", "orders:refund", "inventory:edit"), codes.PermissionDenied},
	} {
		if _, err := client.ReserveStock(tc.ctx, req); status.Code(err) != tc.want {
			t.Errorf("reserve, %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	rel := &inventoryv1.ReleaseStockRequest{TenantId: tn.ID, OrderId: order2}
	if _, err := client.ReleaseStock(invAs(tn.ID, "orders:create", "inventory:edit"), rel); status.Code(err) != codes.PermissionDenied ||
		status.Convert(err).Message() != "Missing required permission: orders:void" {
		t.Errorf("release without void or refund: %v", err)
	}
	if _, err := client.ReleaseStock(invAs(other.ID, "orders:void"), &inventoryv1.ReleaseStockRequest{TenantId: other.ID, OrderId: order2}); err != nil {
		t.Errorf("another tenant's release of the order id: %v", err)
	}
	if got := stocks(); got != "7 2 0" {
		t.Errorf("another tenant released this tenant's stock: %s", got)
	}
	// Shape errors are plain validation failures with property paths.
	_, err = reserve(orders, "not-a-uuid", []*inventoryv1.ReserveStockLine{{LineNumber: 1, ItemId: tote, Quantity: 0}})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(fmt.Sprint(st.Details()), "OrderId") ||
		!strings.Contains(fmt.Sprint(st.Details()), "Items[0].Quantity") {
		t.Errorf("shape errors: %v", st.Details())
	}
}
