package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/google/uuid"
)

// TestSecurityHeadersOnEveryRouteClass holds one response of every class
// the gateway serves to the browser security headers (docs/gateway.md,
// "Browser security headers"): X-Content-Type-Options: nosniff on all;
// framing refused (CSP frame-ancestors 'none' and X-Frame-Options: DENY)
// on all; Cache-Control: no-store on everything under /api and the
// probes; and on /docs and /console a script-src without 'unsafe-inline'.
func TestSecurityHeadersOnEveryRouteClass(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	other := uuid.NewString()
	csv := []byte("externalId,firstName,lastName,email\nh1,Ada,Lovelace,ada@example.org\n")
	cases := []struct {
		name    string
		status  int
		noStore bool
		do      func() *apptest.Response
	}{
		{"API JSON", http.StatusOK, true, func() *apptest.Response { return c.Do(t, "GET", tPath(tn.ID, "/contacts"), tn.Key, nil) }},
		{"401 problem", http.StatusUnauthorized, true, func() *apptest.Response { return c.Do(t, "GET", tPath(tn.ID, "/contacts"), "", nil) }},
		{"404 another tenant", http.StatusNotFound, true, func() *apptest.Response { return c.Do(t, "GET", tPath(other, "/contacts"), tn.Key, nil) }},
		{"404 no route", http.StatusNotFound, true, func() *apptest.Response { return c.Do(t, "GET", tPath(tn.ID, "/nothing-here"), tn.Key, nil) }},
		{"400 problem", http.StatusBadRequest, true, func() *apptest.Response {
			return c.Do(t, "GET", tPath(tn.ID, "/contacts?madeUp=1"), tn.Key, nil)
		}},
		{"import upload", http.StatusAccepted, true, func() *apptest.Response {
			return uploadImport(t, c, tn.ID, tn.Key, "kind=contacts&format=csv&dry_run=true", csv)
		}},
		{"stripe notification", http.StatusBadRequest, true, func() *apptest.Response {
			return c.Do(t, "POST", "/api/webhooks/stripe/no-such-tenant", "", `{"id":"evt_1"}`, "Stripe-Signature", "t=1,v1=00")
		}},
		{"public route", http.StatusBadRequest, true, func() *apptest.Response { return c.Do(t, "POST", "/api/contact-form", "", `{}`) }},
		{"/healthz", http.StatusOK, true, func() *apptest.Response { return c.Do(t, "GET", "/healthz", "", nil) }},
		{"/openapi.json", http.StatusOK, false, func() *apptest.Response { return c.Do(t, "GET", "/openapi.json", "", nil) }},
		{"/errors/validation", http.StatusOK, false, func() *apptest.Response { return c.Do(t, "GET", "/errors/validation", "", nil) }},
		{"/docs", http.StatusOK, false, func() *apptest.Response { return c.Do(t, "GET", "/docs", "", nil) }},
		{"/docs/docs.js", http.StatusOK, false, func() *apptest.Response { return c.Do(t, "GET", "/docs/docs.js", "", nil) }},
		{"/console/sign-in", http.StatusOK, true, func() *apptest.Response { return c.Do(t, "GET", "/console/sign-in", "", nil) }},
	}
	for _, tc := range cases {
		r := tc.do()
		if r.Status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, r.Status, tc.status, r.Body)
		}
		h := r.Header
		if h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", tc.name, h.Get("X-Content-Type-Options"))
		}
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: framing not refused: CSP %q, X-Frame-Options %q", tc.name, csp, h.Get("X-Frame-Options"))
		}
		if tc.noStore && h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tc.name, h.Get("Cache-Control"))
		}
		if strings.Contains(csp, "unsafe-inline") && strings.Contains(scriptSources(csp), "unsafe-inline") {
			t.Errorf("%s: scripts may run inline: %q", tc.name, csp)
		}
	}
	console := c.Do(t, "GET", "/console/sign-in", "", nil)
	if h := console.Header; scriptSources(h.Get("Content-Security-Policy")) != "'self'" || h.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("/console: CSP %q, Referrer-Policy %q", h.Get("Content-Security-Policy"), h.Get("Referrer-Policy"))
	}
	docs := c.Do(t, "GET", "/docs", "", nil)
	if src := scriptSources(docs.Header.Get("Content-Security-Policy")); src != "'self'" {
		t.Errorf("/docs script-src %q, want 'self'", src)
	}
	if strings.Contains(string(docs.Body), "<script>") {
		t.Errorf("/docs has an inline script, which its CSP blocks")
	}
}

// scriptSources is a CSP's script-src, or its default-src without one.
func scriptSources(csp string) string {
	src := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		src[name] = value
	}
	if s, ok := src["script-src"]; ok {
		return s
	}
	return src["default-src"]
}
