package gateway

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/problem"
)

// openAPIOperations reads the published document: for each "METHOD path"
// (path variables in lowerCamel, as published), its query parameters.
func openAPIOperations(t *testing.T) map[string][]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct{ Name, In string } `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string][]string{}
	for path, methods := range doc.Paths {
		for method, op := range methods {
			query := []string{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					query = append(query, p.Name)
				}
			}
			slices.Sort(query)
			ops[strings.ToUpper(method)+" "+path] = query
		}
	}
	return ops
}

// publishedPath is rr's template as the document writes it: each path
// variable under its field's JSON name.
func publishedPath(rr *requestRule, template string) string {
	fields := rr.input.Descriptor().Fields()
	return patternVar.ReplaceAllStringFunc(template, func(v string) string {
		name := patternVar.FindStringSubmatch(v)[1]
		if fd := fields.ByName(protoreflect.Name(name)); fd != nil {
			name = fd.JSONName()
		}
		return "{" + name + "}"
	})
}

// TestQueryParametersAsPublished: every route of the document has a rule,
// and the query parameters the gateway reads for it are exactly the ones
// the document names (`minAmount`, as the server reads it, not
// `minAmount.value`).
func TestQueryParametersAsPublished(t *testing.T) {
	ops := openAPIOperations(t)
	seen := map[string]bool{}
	for key, rr := range requestRules() {
		op := key.method + " " + publishedPath(rr, key.template)
		published, ok := ops[op]
		if !ok {
			t.Errorf("%s (%s) is routed but not published", op, rr.rpc)
			continue
		}
		seen[op] = true
		read := []string{}
		fields := rr.input.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if !fd.IsMap() && !rr.skipQuery(string(fd.Name())) {
				read = append(read, fd.JSONName())
			}
		}
		slices.Sort(read)
		if !slices.Equal(read, published) {
			t.Errorf("%s: the gateway reads the query parameters %v, the document names %v", op, read, published)
		}
	}
	// The import upload has no rule: it reads its query itself
	// (importHeader), the ImportHeader fields importQueryFields names.
	upload := "POST /api/tenants/{tenantId}/imports"
	if published, ok := ops[upload]; !ok {
		t.Errorf("%s is routed but not published", upload)
	} else {
		seen[upload] = true
		read := []string{}
		fields := (&importsv1.ImportHeader{}).ProtoReflect().Descriptor().Fields()
		for name := range importQueryFields {
			read = append(read, fields.ByName(protoreflect.Name(name)).JSONName())
		}
		slices.Sort(read)
		if !slices.Equal(read, published) {
			t.Errorf("%s: the gateway reads the query parameters %v, the document names %v", upload, read, published)
		}
	}
	for op := range ops {
		if !seen[op] {
			t.Errorf("%s is published but has no rule", op)
		}
	}
}

// TestResourceOfAnRPC: a create or a replace may carry back what its
// resource returns; a refund (of an order) and reads have no resource.
func TestResourceOfAnRPC(t *testing.T) {
	want := map[string]string{
		"almoner.contacts.v1.ContactService.CreateContact":          "almoner.contacts.v1.Contact",
		"almoner.contacts.v1.ContactService.UpdateContact":          "almoner.contacts.v1.Contact",
		"almoner.auth.v1.ApiKeyService.CreateApiKey":                "almoner.auth.v1.ApiKey",
		"almoner.webhooks.v1.WebhookService.CreateWebhook":          "almoner.webhooks.v1.Webhook",
		"almoner.webhooks.v1.WebhookService.UpdateWebhook":          "almoner.webhooks.v1.Webhook",
		"almoner.inventory.v1.InventoryService.UpdateInventoryItem": "almoner.inventory.v1.InventoryItem",
		"almoner.orders.v1.OrderService.CreateOrder":                "almoner.orders.v1.Order",
		"almoner.orders.v1.FundService.UpdateFund":                  "almoner.orders.v1.Fund",
		"almoner.orders.v1.BatchService.CreateBatch":                "almoner.orders.v1.Batch",
		"almoner.reports.v1.ReportService.UpdateReport":             "almoner.reports.v1.Report",
		"almoner.orders.v1.OrderService.CreateOrderRefund":          "",
		"almoner.orders.v1.OrderService.VoidOrder":                  "",
		"almoner.contacts.v1.ContactService.CheckDuplicateContacts": "",
		"almoner.reports.v1.ReportService.RunReport":                "",
	}
	found := map[string]bool{}
	for _, rr := range requestRules() {
		w, ok := want[string(rr.rpc)]
		if !ok {
			continue
		}
		found[string(rr.rpc)] = true
		got := ""
		if rr.body.Resource != nil {
			got = string(rr.body.Resource.FullName())
		}
		if got != w {
			t.Errorf("%s: resource %q, want %q", rr.rpc, got, w)
		}
	}
	for rpc := range want {
		if !found[rpc] {
			t.Errorf("%s has no rule", rpc)
		}
	}
}

// TestEveryRouteRefusesUnknownQueryParameters: a made-up query parameter
// is a 400 under its name on every published route, those whose handler
// never reads the query string included, before any service is called.
func TestEveryRouteRefusesUnknownQueryParameters(t *testing.T) {
	g, u := startEdge(t, Config{})
	vars := regexp.MustCompile(`\{[^}]+\}`)
	for op := range openAPIOperations(t) {
		method, path, _ := strings.Cut(op, " ")
		path = strings.Replace(path, "{tenantId}", edgeTenant, 1)
		path = vars.ReplaceAllString(path, "x1")
		key := goodKey
		if strings.HasPrefix(path, "/api/auth/") {
			// The staff routes refuse any key (401) before the query.
			key = ""
		}
		req := request(method, path+"?bogus=1&page=1", key, "", nil, 0)
		if strings.HasPrefix(path, "/api/admin/") {
			// An operator's session, never a key.
			req.Header.Del("X-Api-Key")
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: operatorToken})
		}
		w := serve(g, req)
		var d problem.Document
		_ = json.Unmarshal(w.Body.Bytes(), &d)
		if w.Code != http.StatusBadRequest || len(d.Errors["Bogus"]) != 1 || !strings.Contains(d.Errors["Bogus"][0], "'Bogus' is not a query parameter of this request.") {
			t.Errorf("%s %s?bogus=1: %d %s, want a 400 under Bogus", method, path, w.Code, w.Body)
		}
	}
	if calls, _, _ := u.seen(); calls != 0 {
		t.Errorf("the services were called %d times", calls)
	}
}

// TestRoutedRequestsCarryOnlyWhatTheyDefine: through the mux, a query
// parameter the path sets, a body property the request does not define
// (or its path sets), and a body on a route that takes none are 400s under
// their names, and the service is not called; a body carrying back what
// the resource returns reaches it.
func TestRoutedRequestsCarryOnlyWhatTheyDefine(t *testing.T) {
	g, u := startEdge(t, Config{})
	for _, tc := range []struct {
		method, path, body, field, message string
	}{
		{"GET", keysURL + "?tenantId=" + edgeTenant, "", "TenantId", "'TenantId' cannot be set in the query string."},
		{"GET", keysURL + "?%zz", "", "", "The query string is not valid."},
		{"POST", keysURL, `{"name":"job","scopes":["contacts:view"],"scoeps":["x"]}`, "Scoeps", "'Scoeps' is not a property of this request."},
		{"POST", keysURL, `{"name":"job","scopes":["contacts:view"],"tenantId":"` + edgeTenant + `"}`, "TenantId", "'TenantId' is set by the request's path, not its body."},
		// The create response's secret is not a property of the key.
		{"POST", keysURL, `{"name":"job","scopes":["contacts:view"],"plainTextKey":"ak_test_x"}`, "PlainTextKey", "is not a property"},
		{"DELETE", keysURL + "/k1", `{"force":true}`, "Force", "'Force' is not a property of this request."},
		{"POST", "/api/contact-form?utm_source=x", `{"name":"A","email":"a@example.org","message":"hi"}`, "Utm_source", "is not a query parameter"},
		{"POST", "/api/contact-form", `{"name":"A","email":"a@example.org","message":"hi","subject":"x"}`, "Subject", "is not a property"},
	} {
		var body *watchedBody
		r := request(tc.method, tc.path, goodKey, "", nil, 0)
		if tc.body != "" {
			body = newWatchedBody(tc.body)
			r = request(tc.method, tc.path, goodKey, "application/json", body, int64(len(tc.body)))
		}
		w := serve(g, r)
		var d problem.Document
		_ = json.Unmarshal(w.Body.Bytes(), &d)
		if w.Code != http.StatusBadRequest || len(d.Errors[tc.field]) != 1 || !strings.Contains(d.Errors[tc.field][0], tc.message) {
			t.Errorf("%s %s %s: %d %s, want a 400 under %q saying %q", tc.method, tc.path, tc.body, w.Code, w.Body, tc.field, tc.message)
		}
		if strings.Contains(tc.path, "?") && body != nil && body.reads.Load() != 0 {
			t.Errorf("%s %s: the body was read before the query string was refused", tc.method, tc.path)
		}
	}
	if calls, _, _ := u.seen(); calls != 0 {
		t.Errorf("the services were called %d times", calls)
	}
	// What the key's list returns may be sent back on a create: read-only
	// properties are accepted and ignored.
	back := `{"id":"k0","name":"job","keyPrefix":"ak_test_","scopes":["contacts:view"],"expiresAt":null,"lastUsedAt":null,"createdAt":"2026-01-01T00:00:00Z"}`
	w := serve(g, request("POST", keysURL, goodKey, "application/json", newWatchedBody(back), int64(len(back))))
	if w.Code != http.StatusCreated {
		t.Errorf("POST %s with a listed key's properties: %d %s", keysURL, w.Code, w.Body)
	}
	// A bare POST's empty object is no property at all.
	if w := serve(g, request("DELETE", keysURL+"/k1", goodKey, "application/json", newWatchedBody(`{}`), 2)); w.Code == http.StatusBadRequest {
		t.Errorf("DELETE with {}: %d %s", w.Code, w.Body)
	}
}
