package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestMethodNotAllowedNamesAllow: every 405 carries Allow with exactly the
// methods the path's routes answer, found without calling a service.
func TestMethodNotAllowedNamesAllow(t *testing.T) {
	g, u := startEdge(t, Config{})
	tenant := "/api/tenants/" + edgeTenant
	for _, tc := range []struct {
		method, path, key, allow string
	}{
		{"PATCH", keysURL, goodKey, "GET, POST"},
		{"PUT", keysURL, goodKey, "GET, POST"},
		{"GET", keysURL + "/k1", goodKey, "DELETE"},
		{"GET", "/api/contact-form", "", "POST"},
		{"DELETE", "/api/contact-form", "", "POST"},
		{"GET", "/api/webhooks/stripe/friends", "", "POST"},
		{"POST", tenant + "/recurring-donations", goodKey, "GET"},
		// The mux's own answer: /reports/{report_id} matches this path
		// too, so PUT and DELETE are routed here (as report "types").
		{"POST", tenant + "/reports/types", goodKey, "GET, PUT, DELETE"},
		{"MADE-UP", "/api/contact-form", "", "POST"},
	} {
		w := serve(g, request(tc.method, tc.path, tc.key, "", nil, 0))
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q, want 405 with Allow %q", tc.method, tc.path, w.Code, w.Header().Get("Allow"), tc.allow)
		}
		if !strings.Contains(w.Body.String(), "/errors/method-not-allowed") {
			t.Errorf("%s %s: body %s", tc.method, tc.path, w.Body)
		}
	}
	// A form-encoded POST to a GET-only route is refused, not run as the
	// GET (grpc-gateway's path-length fallback is off).
	form := request("POST", tenant+"/recurring-donations", goodKey, "application/x-www-form-urlencoded", http.NoBody, 0)
	if w := serve(g, form); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET" {
		t.Errorf("form POST to a GET route: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if calls, _, _ := u.seen(); calls != 0 {
		t.Errorf("finding Allow called the services %d times", calls)
	}
	// Routed methods still run.
	if w := serve(g, request("GET", keysURL, goodKey, "", nil, 0)); w.Code != http.StatusOK {
		t.Errorf("GET %s: %d %s", keysURL, w.Code, w.Body)
	}
}
