package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestNoBodyReadBeforeTheCallerIsKnown sends bodies the gateway must refuse
// from the headers alone and checks that not one read was made of them:
// no key or a wrong one is 401, another tenant 404, whatever the declared
// length; and only then the route, the media type and the size are
// judged, still unread.
func TestNoBodyReadBeforeTheCallerIsKnown(t *testing.T) {
	g, u := startEdge(t, Config{})
	const twoMB = 2_000_000
	for _, tc := range []struct {
		name, method, path, key, contentType string
		length                               int64
		want                                 int
	}{
		{"no key, 2 MB", "POST", keysURL, "", "application/json", twoMB, http.StatusUnauthorized},
		{"no key, length unknown", "POST", keysURL, "", "application/json", -1, http.StatusUnauthorized},
		{"no key, not JSON", "POST", keysURL, "", "text/plain", twoMB, http.StatusUnauthorized},
		{"wrong key, 2 MB", "POST", keysURL, "ak_test_wrong", "application/json", twoMB, http.StatusUnauthorized},
		{"no key, unknown path", "PUT", "/api/tenants/" + edgeTenant + "/nothing", "", "application/json", twoMB, http.StatusUnauthorized},
		{"another tenant, 2 MB", "POST", "/api/tenants/" + otherTenant + "/api-keys", goodKey, "application/json", twoMB, http.StatusNotFound},
		{"another tenant, length unknown", "POST", "/api/tenants/" + otherTenant + "/api-keys", goodKey, "application/json", -1, http.StatusNotFound},
		{"unknown route", "POST", "/api/tenants/" + edgeTenant + "/nothing", goodKey, "application/json", 10, http.StatusNotFound},
		{"method not routed", "PATCH", keysURL, goodKey, "application/json", 10, http.StatusMethodNotAllowed},
		{"not JSON", "POST", keysURL, goodKey, "text/plain", 10, http.StatusUnsupportedMediaType},
		{"declared too large", "POST", keysURL, goodKey, "application/json", twoMB, http.StatusRequestEntityTooLarge},
		{"public route, declared too large", "POST", "/api/contact-form", "", "application/json", twoMB, http.StatusRequestEntityTooLarge},
		{"public route, not JSON", "POST", "/api/contact-form", "", "text/plain", 10, http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := newWatchedBody(strings.Repeat("x", 64))
			w := serve(g, request(tc.method, tc.path, tc.key, tc.contentType, body, tc.length))
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if n := body.reads.Load(); n != 0 {
				t.Errorf("%d reads of the body of a refused request", n)
			}
			if w.Header().Get("Connection") != "close" {
				t.Errorf("Connection = %q: the server would read (and wait for) the unread body to keep the connection", w.Header().Get("Connection"))
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if calls, _, _ := u.seen(); calls != 0 {
		t.Errorf("%d upstream calls for refused requests", calls)
	}

	// An accepted request's body is read, whole, and reaches the service.
	body := newWatchedBody(`{"name":"nightly","scopes":["contacts:view"]}`)
	w := serve(g, request("POST", keysURL, goodKey, "application/json", body, -1))
	if _, name, _ := u.seen(); w.Code != http.StatusCreated || name != "nightly" || body.reads.Load() == 0 {
		t.Errorf("accepted body: %d %s, upstream saw name %q", w.Code, w.Body, name)
	}
	if held := g.budget.inUse(); held != 0 {
		t.Errorf("%d body bytes still held after the request", held)
	}
}

// TestBodyLimit checks the per-request limit on bodies of declared and of
// unknown length, at the limit and one byte past it.
func TestBodyLimit(t *testing.T) {
	g, u := startEdge(t, Config{MaxBodyBytes: 64})
	pad := func(n int) string {
		s := `{"name":"`
		return s + strings.Repeat("a", n-len(s)-2) + `"}`
	}
	for _, tc := range []struct {
		name   string
		size   int
		length func(int) int64
		want   int
	}{
		{"declared, at the limit", 64, func(n int) int64 { return int64(n) }, http.StatusCreated},
		{"declared, one past", 65, func(n int) int64 { return int64(n) }, http.StatusRequestEntityTooLarge},
		{"unknown, at the limit", 64, func(int) int64 { return -1 }, http.StatusCreated},
		{"unknown, one past", 65, func(int) int64 { return -1 }, http.StatusRequestEntityTooLarge},
		{"unknown, far past", 10_000, func(int) int64 { return -1 }, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := pad(tc.size)
			w := serve(g, request("POST", keysURL, goodKey, "application/json", io.NopCloser(strings.NewReader(content)), tc.length(len(content))))
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want == http.StatusCreated {
				if _, name, _ := u.seen(); name != strings.Repeat("a", tc.size-len(`{"name":""}`)) {
					t.Errorf("upstream saw a name of %d bytes", len(name))
				}
			}
		})
	}
	// A body that cannot be read is a 400, and holds nothing afterwards.
	w := serve(g, request("POST", keysURL, goodKey, "application/json", errReader{}, 40))
	if w.Code != http.StatusBadRequest {
		t.Errorf("unreadable body: %d %s", w.Code, w.Body)
	}
	if held := g.budget.inUse(); held != 0 {
		t.Errorf("%d body bytes still held", held)
	}
}

// TestBodyBudget holds bodies in flight and checks that the budget bounds
// them: public routes stop at their share, keyed routes still get the
// rest, a refusal is an immediate 503 with Retry-After that reads
// nothing, and everything held is given back.
func TestBodyBudget(t *testing.T) {
	// Bodies up to 1,000 bytes, 8,000 in all, 4,000 of them for public
	// routes, where a body counts four times its length (its copies):
	// one public body of the largest size.
	g, _ := startEdge(t, Config{MaxBodyBytes: 1000, BodyMemoryBytes: 8000})
	form := `{"name":"n","email":"a@example.org","message":"m"}`
	apiKey := `{"name":"k","scopes":["contacts:view"]}`

	// hold starts a request whose body the gateway has admitted (its
	// declared length is reserved) and is reading, and returns a function
	// that lets it finish and returns its status.
	hold := func(path, key, content string, declared int64) func() int {
		body := newWatchedBody(content)
		return holdRequest(t, g, request("POST", path, key, "application/json", body, declared), body)
	}
	refused := func(what, path, key, content string) {
		t.Helper()
		body := newWatchedBody(content)
		w := serve(g, request("POST", path, key, "application/json", body, int64(len(content))))
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Fatalf("%s: %d (Retry-After %q), want 503 with Retry-After: %s", what, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		var p map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p["type"] != "/errors/unavailable" {
			t.Errorf("%s: problem %s", what, w.Body)
		}
		if body.reads.Load() != 0 {
			t.Errorf("%s: the refused body was read", what)
		}
	}
	admitted := func(what, path, key, content string) {
		t.Helper()
		w := serve(g, request("POST", path, key, "application/json", io.NopCloser(strings.NewReader(content)), int64(len(content))))
		if w.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", what, w.Code, w.Body)
		}
	}

	// One anonymous sender declaring the largest body takes the public
	// share: the next public body is refused, a keyed one is not.
	publicDone := hold("/api/contact-form", "", form+strings.Repeat(" ", 1000-len(form)), 1000)
	refused("public route over its share", "/api/contact-form", "", form)
	admitted("keyed route beside a full public share", keysURL, goodKey, apiKey)

	// Keyed bodies fill the rest; then keyed bodies are refused too.
	var keyedDone []func() int
	for range 4 {
		keyedDone = append(keyedDone, hold(keysURL, goodKey, apiKey+strings.Repeat(" ", 1000-len(apiKey)), 1000))
	}
	if held := g.budget.inUse(); held != 8000 {
		t.Errorf("budget holds %d bytes, want 8000 (4 × 1,000 keyed, 4 × 1,000 public)", held)
	}
	refused("keyed route over the total", keysURL, goodKey, apiKey)

	// Finishing gives everything back.
	if code := publicDone(); code != http.StatusCreated {
		t.Errorf("held public request: %d", code)
	}
	for _, done := range keyedDone {
		if code := done(); code != http.StatusCreated {
			t.Errorf("held keyed request: %d", code)
		}
	}
	if held := g.budget.inUse(); held != 0 {
		t.Errorf("budget holds %d bytes after every request ended", held)
	}
	admitted("public route after the others ended", "/api/contact-form", "", form)
}

func TestBudgetMustHoldOneBody(t *testing.T) {
	if _, err := New(t.Context(), Config{Upstreams: map[string]string{authName: "127.0.0.1:1"}, MaxBodyBytes: 1000, BodyMemoryBytes: 999}); err == nil {
		t.Error("a budget smaller than one body was accepted")
	}
}

// TestJSONMediaTypes: only JSON bodies are read; anything else is a 415
// problem document, and the processor notification route takes Stripe's
// own Content-Type with the bytes it sent unchanged.
func TestJSONMediaTypes(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON; charset=UTF-8":   true,
		"application/merge-patch+json":      true,
		"application/problem+json":          true,
		"application/json; charset=latin1":  false,
		"text/plain":                        false,
		"text/json":                         false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"application/jsonx":                 false,
		"application/xml":                   false,
		"":                                  false,
		"application/json; charset":         false,
	} {
		if got := jsonMediaType(ct); got != want {
			t.Errorf("jsonMediaType(%q) = %v, want %v", ct, got, want)
		}
	}

	g, u := startEdge(t, Config{})
	const body = `{"name":"x","scopes":["contacts:view"]}`
	for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded"} {
		w := serve(g, request("POST", keysURL, goodKey, ct, io.NopCloser(strings.NewReader(body)), int64(len(body))))
		var p map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		if w.Code != http.StatusUnsupportedMediaType || p["type"] != "/errors/unsupported-media-type" || p["status"] != float64(415) {
			t.Errorf("Content-Type %q: %d %s", ct, w.Code, w.Body)
		}
	}
	if calls, _, _ := u.seen(); calls != 0 {
		t.Errorf("%d upstream calls for bodies that are not JSON", calls)
	}
	// No body, no media type needed.
	if w := serve(g, request("GET", keysURL, goodKey, "", nil, 0)); w.Code != http.StatusOK {
		t.Errorf("GET without a body: %d %s", w.Code, w.Body)
	}

	event := `{"id":"evt_1","type":"payment_intent.succeeded",  "data":{}}`
	r := request("POST", "/api/webhooks/stripe/friends", "", "application/json; charset=utf-8", io.NopCloser(strings.NewReader(event)), int64(len(event)))
	r.Header.Set("Stripe-Signature", "t=1,v1=x")
	w := serve(g, r)
	if _, _, got := u.seen(); w.Code != http.StatusOK || string(got) != event {
		t.Errorf("Stripe notification: %d %s; the service received %q", w.Code, w.Body, got)
	}
}
