package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const tid = "0190a4d6-0000-7000-8000-000000000001"

// fakeAPI answers the console's in-process calls from a table keyed by
// "METHOD path" (the path with its query), and records them.
type fakeAPI struct {
	mu      sync.Mutex
	answers map[string]fakeAnswer
	calls   []*http.Request
	bodies  []string
}

type fakeAnswer struct {
	status  int
	body    any
	cookies []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, r)
	f.bodies = append(f.bodies, string(b))
	a, ok := f.answers[r.Method+" "+r.URL.RequestURI()]
	if !ok {
		a, ok = f.answers[r.Method+" "+r.URL.Path]
	}
	f.mu.Unlock()
	if !ok {
		a = fakeAnswer{status: http.StatusNotFound, body: map[string]any{"title": "Not Found", "status": 404}}
	}
	for _, c := range a.cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_ = json.NewEncoder(w).Encode(a.body)
}

// called reports whether the API got a request for "METHOD path".
func (f *fakeAPI) called(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.calls {
		if r.Method+" "+r.URL.Path == key {
			return f.bodies[i], true
		}
	}
	return "", false
}

func ownerSession(email, tenantName string) map[string]any {
	return map[string]any{"user": map[string]any{"id": "u1", "email": email, "firstName": "Ada", "lastName": "L"},
		"mfaRequired": false, "mfaMethods": []string{},
		"memberships": []any{map[string]any{"tenantId": tid, "tenantName": tenantName, "role": "owner"}}}
}

func newConsole(answers map[string]fakeAnswer) (*Console, *fakeAPI) {
	f := &fakeAPI{answers: answers}
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	return New(Config{API: f, Now: func() time.Time { return now }}), f
}

// do sends a request as a browser on the console's own origin would.
func do(c *Console, method, target string, form url.Values, headers ...string) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequestWithContext(context.Background(), method, "http://console.test"+target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: "sess"})
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	return w
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	c, _ := newConsole(map[string]fakeAnswer{"GET /api/auth/session": {status: 401}})
	for _, target := range []string{"/console/sign-in", "/console/", "/console/nowhere", "/console/t/" + tid + "/keys"} {
		w := do(c, "GET", target, nil)
		h := w.Header()
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Referrer-Policy") != "same-origin" || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", target, h)
		}
	}
	for _, want := range []string{"script-src 'self';", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
		if !strings.Contains(CSP, want) {
			t.Errorf("CSP lacks %s", want)
		}
	}
	if strings.Contains(CSP, "unsafe-inline") || strings.Contains(CSP, "unsafe-eval") {
		t.Errorf("CSP allows inline code: %s", CSP)
	}
}

// TestPagesHaveNoInlineScriptOrStyle: the CSP would block them, so none
// may be in a template.
func TestPagesHaveNoInlineScriptOrStyle(t *testing.T) {
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|style="|\son[a-z]+="`)
	entries, err := templateFS.ReadDir("templates")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := templateFS.ReadFile("templates/" + e.Name())
		if m := inline.Find(b); m != nil {
			t.Errorf("%s has inline code: %s", e.Name(), m)
		}
	}
}

func TestCrossSiteFormPostRefused(t *testing.T) {
	c, f := newConsole(map[string]fakeAnswer{"POST /api/auth/sign-in": {status: 200, body: ownerSession("a@b.c", "T")}})
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
		w := do(c, "POST", "/console/sign-in", url.Values{"email": {"a@b.c"}, "password": {"x"}}, h...)
		if w.Code != http.StatusForbidden {
			t.Errorf("%v: %d", h, w.Code)
		}
	}
	if _, ok := f.called("POST /api/auth/sign-in"); ok {
		t.Error("a cross-site post reached the API")
	}
	if w := do(c, "POST", "/console/sign-in", url.Values{"email": {"a@b.c"}, "password": {"x"}}, "Sec-Fetch-Site", "same-origin"); w.Code != http.StatusSeeOther {
		t.Errorf("same-origin post: %d", w.Code)
	}
}

// TestEscaping: text from the API (names, emails) is escaped in HTML,
// attributes and URLs.
func TestEscaping(t *testing.T) {
	evil := `<script>alert(1)</script>"'`
	c, _ := newConsole(map[string]fakeAnswer{
		"GET /api/auth/session":                       {status: 200, body: ownerSession(evil+"@x.org", evil)},
		"GET /api/tenants/" + tid + "/api-keys":       {status: 200, body: []any{map[string]any{"id": `k"><img src=x onerror=alert(1)>`, "name": evil, "keyPrefix": evil, "scopes": []string{evil}}}},
		"GET /api/tenants/" + tid + "/webhooks":       {status: 200, body: []any{}},
		"GET /api/tenants/" + tid + "/users":          {status: 200, body: []any{}},
		"GET /api/tenants/" + tid + "/dashboard":      {status: 404, body: map[string]any{}},
		"GET /api/tenants/" + tid + "/roles":          {status: 200, body: []any{}},
		"GET /api/tenants/" + tid + "/impersonations": {status: 200, body: map[string]any{"items": []any{}}},
	})
	w := do(c, "GET", "/console/t/"+tid+"/keys", nil)
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, body)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Errorf("unescaped text in the page:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the name is not shown escaped")
	}
	if !strings.Contains(body, "k%22%3e%3cimg") && !strings.Contains(body, "k%22%3E%3Cimg") {
		t.Errorf("the id is not escaped in the revoke link")
	}
}

func TestSignInTooManyAttempts(t *testing.T) {
	c, _ := newConsole(map[string]fakeAnswer{"POST /api/auth/sign-in": {status: 429, body: map[string]any{"message": "Too many requests"}}})
	w := do(c, "POST", "/console/sign-in", url.Values{"email": {"a@b.c"}, "password": {"x"}})
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "Too many attempts, try again later.") {
		t.Errorf("%d %s", w.Code, w.Body)
	}
}

// TestSignInWithSecondFactor: the session cookie passes through; the
// trusted-device cookie moves to the sign-in pages and is sent back to
// the sign-in route.
func TestSignInWithSecondFactor(t *testing.T) {
	pending := ownerSession("a@b.c", "T")
	pending["mfaRequired"], pending["mfaMethods"] = true, []string{"totp", "recovery"}
	c, f := newConsole(map[string]fakeAnswer{
		"POST /api/auth/sign-in": {status: 200, body: pending, cookies: []string{"almoner_session=p1; Path=/; HttpOnly; SameSite=Lax"}},
		"POST /api/auth/mfa/verify": {status: 200, body: ownerSession("a@b.c", "T"), cookies: []string{
			"almoner_session=s2; Path=/; HttpOnly; SameSite=Lax", "almoner_device=d1; Path=/api/auth; Max-Age=2592000; HttpOnly; SameSite=Lax"}},
	})
	w := do(c, "POST", "/console/sign-in", url.Values{"email": {"a@b.c"}, "password": {"pw"}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/sign-in/verify?methods=totp%2Crecovery" ||
		!strings.HasPrefix(w.Header().Get("Set-Cookie"), "almoner_session=p1") {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	page := do(c, "GET", "/console/sign-in/verify?methods=totp%2Crecovery", nil).Body.String()
	if !strings.Contains(page, `value="totp"`) || strings.Contains(page, `value="email"`) || !strings.Contains(page, "Remember this browser for 30 days") {
		t.Errorf("verify page: %s", page)
	}
	w = do(c, "POST", "/console/sign-in/verify", url.Values{"method": {"totp"}, "code": {"123456"}, "remember": {"on"}})
	var device string
	for _, line := range w.Header().Values("Set-Cookie") {
		if strings.HasPrefix(line, "almoner_device=") {
			device = line
		}
	}
	if w.Code != http.StatusSeeOther || !strings.Contains(device, "Path=/console/sign-in") || !strings.Contains(device, "HttpOnly") {
		t.Errorf("verify: %d %v", w.Code, w.Header().Values("Set-Cookie"))
	}
	if body, _ := f.called("POST /api/auth/mfa/verify"); !strings.Contains(body, `"rememberDevice":true`) || !strings.Contains(body, `"code":"123456"`) {
		t.Errorf("verify body %s", body)
	}
	// The next sign-in carries the device cookie to the API.
	r := httptest.NewRequestWithContext(context.Background(), "POST", "http://console.test/console/sign-in", strings.NewReader("email=a%40b.c&password=pw"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(&http.Cookie{Name: deviceCookie, Value: "d1"})
	c.ServeHTTP(httptest.NewRecorder(), r)
	last := f.calls[len(f.calls)-1]
	if ck, err := last.Cookie(deviceCookie); err != nil || ck.Value != "d1" {
		t.Errorf("sign-in without the device cookie: %v", last.Header)
	}
}

// TestEmailLinksLeaveTheURL: the token goes into a cookie of the page at
// once and the browser lands on the page without it.
func TestEmailLinksLeaveTheURL(t *testing.T) {
	c, f := newConsole(map[string]fakeAnswer{"POST /api/auth/invitations/accept": {status: 200, body: ownerSession("a@b.c", "T"),
		cookies: []string{"almoner_session=s; Path=/; HttpOnly"}}})
	for _, tc := range []struct{ link, page, cookie string }{
		{"/accept-invitation?token=tok1", "/console/accept-invitation", invitationCookie},
		{"/console/accept-invitation?token=tok1", "/console/accept-invitation", invitationCookie},
		{"/reset-password?token=tok1", "/console/reset-password", resetCookie},
	} {
		w := do(c, "GET", tc.link, nil)
		set := w.Header().Get("Set-Cookie")
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != tc.page ||
			!strings.HasPrefix(set, tc.cookie+"=tok1") || !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "Path="+tc.page) {
			t.Errorf("%s: %d %v", tc.link, w.Code, w.Header())
		}
	}
	r := httptest.NewRequestWithContext(context.Background(), "POST", "http://console.test/console/accept-invitation", strings.NewReader("password=long+enough+pw&firstName=A&lastName=B"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(&http.Cookie{Name: invitationCookie, Value: "tok1"})
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	if body, _ := f.called("POST /api/auth/invitations/accept"); w.Code != http.StatusSeeOther || !strings.Contains(body, `"token":"tok1"`) {
		t.Errorf("accept: %d %s", w.Code, body)
	}
}

// TestNavFollowsTheAPI: a page whose list route answers 403 is not in the
// nav, and opening it shows the refusal.
func TestNavFollowsTheAPI(t *testing.T) {
	refused := fakeAnswer{status: 403, body: map[string]any{"title": "Missing required permission: api-keys:manage", "status": 403}}
	c, _ := newConsole(map[string]fakeAnswer{
		"GET /api/auth/session":                 {status: 200, body: ownerSession("v@b.c", "T")},
		"GET /api/tenants/" + tid + "/api-keys": refused,
		"GET /api/tenants/" + tid + "/users":    refused,
		"GET /api/tenants/" + tid + "/webhooks": {status: 200, body: []any{}},
	})
	w := do(c, "GET", "/console/t/"+tid+"/keys", nil)
	body := w.Body.String()
	if w.Code != http.StatusForbidden || !strings.Contains(body, "Your role cannot open this page") {
		t.Errorf("%d %s", w.Code, body)
	}
	if strings.Contains(body, ">API keys</a>") || strings.Contains(body, ">Users</a>") || !strings.Contains(body, ">Webhooks</a>") || !strings.Contains(body, ">Dashboard</a>") {
		t.Errorf("nav: %s", body)
	}
}

func TestNotSignedInGoesToSignIn(t *testing.T) {
	c, _ := newConsole(map[string]fakeAnswer{"GET /api/auth/session": {status: 401}})
	w := do(c, "GET", "/console/security", nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/sign-in" {
		t.Errorf("%d %v", w.Code, w.Header())
	}
}

func TestAssetsAreHashedAndCached(t *testing.T) {
	c, _ := newConsole(nil)
	page := do(c, "GET", "/console/sign-in", nil).Body.String()
	m := regexp.MustCompile(`/console/assets/console\.[0-9a-f]{12}\.(css|js)`).FindAllString(page, -1)
	if len(m) != 2 {
		t.Fatalf("asset links %v in %s", m, page)
	}
	for _, u := range m {
		w := do(c, "GET", u, nil)
		if w.Code != 200 || w.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || w.Header().Get("Content-Security-Policy") != CSP {
			t.Errorf("%s: %d %v", u, w.Code, w.Header())
		}
	}
	if w := do(c, "GET", "/console/assets/console.000000000000.css", nil); w.Code != http.StatusNotFound {
		t.Errorf("a stale name: %d", w.Code)
	}
}

func TestOwns(t *testing.T) {
	for p, want := range map[string]bool{"/console": true, "/console/x": true, "/accept-invitation": true, "/reset-password": true,
		"/consoles": false, "/api/auth/sign-in": false, "/docs": false} {
		if Owns(p) != want {
			t.Errorf("Owns(%q) = %v", p, !want)
		}
	}
}

// A page answered to a form post names the page a reload reads instead
// (console.js puts it in the history entry): the form's own path when a
// GET reads it, else the nearest parent that does (the security page for
// a new factor's secret or recovery codes). A page answered to a GET
// names none.
func TestPostedPagesReloadAsReads(t *testing.T) {
	c, _ := newConsole(map[string]fakeAnswer{"POST /api/auth/sign-in": {status: 429, body: map[string]any{"message": "Too many requests"}}})
	w := do(c, "POST", "/console/sign-in", url.Values{"email": {"a@b.c"}, "password": {"x"}})
	if !strings.Contains(w.Body.String(), `<body data-reload="/console/sign-in">`) {
		t.Errorf("posted sign-in page without its reload: %s", w.Body)
	}
	if g := do(c, "GET", "/console/sign-in", nil); strings.Contains(g.Body.String(), "data-reload") {
		t.Errorf("a page read by GET names a reload: %s", g.Body)
	}
	for _, tc := range []struct{ path, want string }{
		{"/console/t/" + tid + "/keys", "/console/t/" + tid + "/keys"},
		{"/console/t/" + tid + "/webhooks", "/console/t/" + tid + "/webhooks"},
		{"/console/security/totp", "/console/security"},
		{"/console/security/recovery-codes", "/console/security"},
		{"/console/t/" + tid + "/keys/k1/revoke", "/console/t/" + tid + "/keys/k1/revoke"},
		{"/console/forgot-password", "/console"},
		{"/elsewhere", ""},
	} {
		if got := c.readable(tc.path); got != tc.want {
			t.Errorf("readable(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
