package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/almoner/almoner/pkg/events"
	"github.com/almoner/almoner/pkg/problem"
	"github.com/almoner/almoner/pkg/scopes"
)

func TestDocsSite(t *testing.T) {
	g := testGateway()
	h := g.opsHandler(http.NotFoundHandler())
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), "GET", path, nil))
		return w
	}

	w := get("/openapi.json")
	var doc struct {
		OpenAPI    string                     `json:"openapi"`
		Paths      map[string]json.RawMessage `json:"paths"`
		Components struct {
			SecuritySchemes map[string]struct {
				Type, In, Name string
			} `json:"securitySchemes"`
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != 200 {
		t.Fatalf("/openapi.json: %d %v", w.Code, err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if sd := doc.Components.SecuritySchemes["ApiKey"]; sd.Type != "apiKey" || sd.In != "header" || sd.Name != "X-Api-Key" {
		t.Errorf("security scheme = %+v", sd)
	}
	if _, ok := doc.Components.Schemas["ProblemDetails"]; !ok {
		t.Error("no problem document schema")
	}
	for _, p := range []string{"/api/tenants/{tenantId}/api-keys", "/api/tenants/{tenantId}/api-keys/{apiKeyId}"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("path %s missing", p)
		}
	}

	for path, want := range map[string]string{
		"/docs":           "/docs/scalar.js",
		"/docs/scalar.js": "createApiReference",
		"/docs/docs.css":  "font",
	} {
		w := get(path)
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d, body lacks %q", path, w.Code, want)
		}
	}
	for _, c := range problem.Categories {
		w := get("/errors/" + c.Name)
		if w.Code != 200 || !strings.Contains(w.Body.String(), c.Title) || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Errorf("/errors/%s: %d", c.Name, w.Code)
		}
	}
	page := get("/docs").Body.String()
	for _, c := range problem.Categories {
		if !strings.Contains(page, `href="/errors/`+c.Name+`"`) {
			t.Errorf("/docs does not link /errors/%s", c.Name)
		}
	}
	if w := get("/errors/no-such-category"); w.Code != http.StatusNotFound {
		t.Errorf("unknown category: %d", w.Code)
	}
}

// TestOpenAPIHasNoInternalComments walks every summary, description and
// title of the published document: lint directives and the protos'
// internal comments, (-- … --), stay out of it (remove_internal_comments
// in buf.gen.yaml; the directives live inside such comments).
func TestOpenAPIHasNoInternalComments(t *testing.T) {
	var doc any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && (k == "summary" || k == "description" || k == "title") {
					checked++
					for _, bad := range []string{"buf:lint", "(--", "--)"} {
						if strings.Contains(s, bad) {
							t.Errorf("%s/%s holds %q: %q", path, k, bad, s)
						}
					}
				}
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s/%d", path, i), e)
			}
		}
	}
	walk("", doc)
	if checked < 100 {
		t.Errorf("only %d texts checked", checked)
	}
}

// TestOpenAPICoversEveryRoute: the served document has an operation for
// every route the gateway binds, under the path the gateway matches (make
// generate writes the document from the same bindings; this catches a
// document left behind).
func TestOpenAPICoversEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	rules := requestRules()
	if len(rules) == 0 {
		t.Fatal("no routes")
	}
	for b, rr := range rules {
		path := patternVar.ReplaceAllStringFunc(b.template, func(v string) string {
			name := patternVar.FindStringSubmatch(v)[1]
			return "{" + rr.input.Descriptor().Fields().ByName(protoreflect.Name(name)).JSONName() + "}"
		})
		op, ok := doc.Paths[path][strings.ToLower(b.method)]
		if !ok {
			t.Errorf("%s %s: not in /openapi.json", b.method, path)
			continue
		}
		if op.OperationID != string(rr.rpc.Name()) {
			t.Errorf("%s %s: operationId %q, want %q", b.method, path, op.OperationID, rr.rpc.Name())
		}
	}
}

// TestOpenAPIEnumsAreTheCatalogs: the scopes of a key and the event types
// of a webhook are listed in the served document (as the ScopeName and
// EventTypeName components the properties refer to), and the lists are the
// catalogs the auth and webhooks services check against (openapigen reads
// pkg/scopes and pkg/events), so one grown without `make generate` fails
// here as well as in make verify.
func TestOpenAPIEnumsAreTheCatalogs(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum       []string `json:"enum"`
				Properties map[string]struct {
					Items struct {
						Ref  string   `json:"$ref"`
						Enum []string `json:"enum"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var scopeNames, eventTypes []string
	for _, s := range scopes.Catalog {
		scopeNames = append(scopeNames, s.Name)
	}
	for _, e := range events.Catalog() {
		eventTypes = append(eventTypes, e.Name)
	}
	for _, c := range []struct {
		schema, property string
		want             []string
	}{
		{"ApiKey", "scopes", scopeNames},
		{"CreatedApiKey", "scopes", scopeNames},
		{"CreateApiKeyRequest", "scopes", scopeNames},
		{"Webhook", "eventTypes", eventTypes},
		{"CreatedWebhook", "eventTypes", eventTypes},
		{"CreateWebhookRequest", "eventTypes", eventTypes},
	} {
		items := doc.Components.Schemas[c.schema].Properties[c.property].Items
		got := items.Enum
		// The closed sets held in Go catalogs are named components
		// (ScopeName, EventTypeName) the items refer to.
		if name, ok := strings.CutPrefix(items.Ref, "#/components/schemas/"); ok {
			got = doc.Components.Schemas[name].Enum
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s.%s enum = %v, want the catalog %v", c.schema, c.property, got, c.want)
		}
	}
}
