package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/problem"
)

func TestDocsSite(t *testing.T) {
	g := testGateway()
	h := g.opsHandler(http.NotFoundHandler())
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w
	}

	w := get("/openapi.json")
	var doc struct {
		Swagger             string                     `json:"swagger"`
		Paths               map[string]json.RawMessage `json:"paths"`
		SecurityDefinitions map[string]struct {
			Type, In, Name string
		} `json:"securityDefinitions"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != 200 {
		t.Fatalf("/openapi.json: %d %v", w.Code, err)
	}
	if sd := doc.SecurityDefinitions["ApiKey"]; sd.Type != "apiKey" || sd.In != "header" || sd.Name != "X-Api-Key" {
		t.Errorf("security definition = %+v", sd)
	}
	if _, ok := doc.Definitions["v1ProblemDetails"]; !ok {
		t.Error("no problem document schema")
	}
	for _, p := range []string{"/api/tenants/{tenantId}/api-keys", "/api/tenants/{tenantId}/api-keys/{apiKeyId}"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("path %s missing", p)
		}
	}

	for path, want := range map[string]string{
		"/docs":          "/docs/docs.js",
		"/docs/docs.js":  "openapi.json",
		"/docs/docs.css": "font",
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
	if w := get("/errors/no-such-category"); w.Code != http.StatusNotFound {
		t.Errorf("unknown category: %d", w.Code)
	}
}
