// Package console is the staff console: server-rendered pages under
// /console for a nonprofit's staff (sign-in with the second factor, the
// account's security, API keys, webhooks, users, the dashboard) and for
// platform operators (/console/admin).
//
// The console has no API of its own. Every page reads and every form
// writes through the gateway's public REST routes, called in-process as
// HTTP requests that carry the browser's session cookie (api.go): the same
// authentication, scopes, rate limits, refusals during impersonation and
// audit rows as any client's. docs/console.md records the design.
package console

import (
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CSP is the Content-Security-Policy of every console response: scripts
// and styles from this origin only (no inline script or style), images
// from this origin and data: URIs (none today but kept for the QR code's
// fallback), forms posted to this origin only, never framed.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Prefix is the path under which the console is served.
const Prefix = "/console"

// The landing paths of the links in invitation and password-reset emails
// (ALMONER_PUBLIC_URL + path, services/auth): the console answers them.
const (
	invitationLink = "/accept-invitation"
	resetLink      = "/reset-password"
)

//go:embed templates/*.html
var templateFS embed.FS

// Config configures the console.
type Config struct {
	// API is the gateway's own handler: the console calls its REST routes
	// in-process (required).
	API http.Handler
	// Logger receives failures of the console itself.
	Logger *slog.Logger
	// Now is the clock (time.Now by default).
	Now func() time.Time
}

// Console is the staff console as an http.Handler.
type Console struct {
	api    http.Handler
	logger *slog.Logger
	now    func() time.Time
	mux    *http.ServeMux
	pages  map[string]*template.Template
	assets *assetSet
	csrf   *http.CrossOriginProtection
}

// New builds the console.
func New(cfg Config) *Console {
	c := &Console{api: cfg.API, logger: cfg.Logger, now: cfg.Now, mux: http.NewServeMux(),
		assets: newAssetSet(), csrf: http.NewCrossOriginProtection()}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.pages = parsePages(c.funcs())
	c.routes()
	return c
}

// Owns reports whether the console answers the path: everything under
// /console and the two landing paths of the emails' links.
func Owns(path string) bool {
	return path == Prefix || strings.HasPrefix(path, Prefix+"/") || path == invitationLink || path == resetLink
}

// ServeHTTP sets the security headers, refuses a cross-origin form post
// (the staff sessions' rule: Sec-Fetch-Site, else Origin against Host)
// and serves the page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if err := c.csrf.Check(r); err != nil {
		http.Error(w, "Cross-site request refused", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	}
	c.mux.ServeHTTP(w, r)
}

// routes registers every page. The tenant pages live under
// /console/t/{tid}/…, the operators' under /console/admin.
func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET "+Prefix+"/assets/{name}", c.assets.serve)
	m.HandleFunc("GET "+invitationLink, c.landing("/console/accept-invitation", invitationCookie))
	m.HandleFunc("GET "+resetLink, c.landing("/console/reset-password", resetCookie))
	m.HandleFunc("GET "+Prefix+"/accept-invitation", c.acceptPage)
	m.HandleFunc("POST "+Prefix+"/accept-invitation", c.acceptPost)
	m.HandleFunc("GET "+Prefix+"/reset-password", c.resetPage)
	m.HandleFunc("POST "+Prefix+"/reset-password", c.resetPost)
	m.HandleFunc("POST "+Prefix+"/forgot-password", c.forgotPost)
	m.HandleFunc("GET "+Prefix+"/sign-in", c.signInPage)
	m.HandleFunc("POST "+Prefix+"/sign-in", c.signInPost)
	m.HandleFunc("GET "+Prefix+"/sign-in/verify", c.verifyPage)
	m.HandleFunc("POST "+Prefix+"/sign-in/verify", c.verifyPost)
	m.HandleFunc("POST "+Prefix+"/sign-in/send-code", c.sendCodePost)
	m.HandleFunc("POST "+Prefix+"/sign-out", c.signOutPost)
	m.HandleFunc("GET "+Prefix+"/{$}", c.pickerPage)
	m.HandleFunc("GET "+Prefix, c.pickerPage)
	c.securityRoutes()
	c.tenantRoutes()
	c.adminRoutes()
	m.HandleFunc(Prefix+"/", c.notFound)
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusNotFound, "message", &page{Title: "Not found", Data: "There is no such page."})
}

// page is what every template gets.
type page struct {
	Title   string
	Session *signedIn
	Tenant  *tenantView
	Banner  *banner
	Flash   string
	Error   string
	Data    any
	// Reload is where a reload of a page answered to a form post goes
	// (render sets it; console.js puts it in the history entry), so that
	// a reload reads the page again instead of posting the form again.
	Reload string
}

// render writes a page with the layout. A failure to execute is logged and
// answered 500 without the partial page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	t, ok := c.pages[name]
	if !ok {
		panic("console: no template " + name)
	}
	if r.Method == http.MethodPost && p.Reload == "" {
		p.Reload = c.readable(r.URL.Path)
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		c.logger.ErrorContext(r.Context(), "console: render", "page", name, "error", err)
		http.Error(w, "The page could not be shown.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// readable is the nearest page a GET can read: path itself, else its
// parents (a form's own path, /console/t/{tid}/keys, or the page it is
// part of, /console/t/{tid}/security for …/security/totp); "" when none
// is. A page that shows a secret is answered to its form's post, not
// redirected (the secret is kept nowhere to show after a redirect): a
// reload that posted the form again made a second key or endpoint.
func (c *Console) readable(path string) string {
	for p := path; strings.HasPrefix(p, Prefix); p = p[:strings.LastIndexByte(p, '/')] {
		// Every console route names its method; a path only a POST
		// answers comes back with the POST's pattern (and a 405).
		if _, pattern := c.mux.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: p}, Host: "console"}); strings.HasPrefix(pattern, "GET ") {
			return p
		}
	}
	return ""
}

// redirect answers a form post with 303 See Other to path, with a message
// code the next page shows (flashMessages; never free text from a query).
func redirect(w http.ResponseWriter, r *http.Request, path, flash string) {
	if flash != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "done=" + flash
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// flashMessages are the confirmations a redirect may ask for.
var flashMessages = map[string]string{
	"key-revoked":       "The key was revoked.",
	"webhook-deleted":   "The endpoint was deleted.",
	"redelivered":       "The delivery was sent again.",
	"replayed":          "The events were queued for replay.",
	"invited":           "The invitation was sent.",
	"role-changed":      "The role was changed.",
	"deactivated":       "The user was deactivated.",
	"access-granted":    "Support access was granted.",
	"access-withdrawn":  "Support access was withdrawn.",
	"session-ended":     "The session was ended.",
	"device-forgotten":  "The browser was forgotten.",
	"devices-forgotten": "Every trusted browser was forgotten.",
	"totp-off":          "The authenticator app was turned off.",
	"email-off":         "Email codes were turned off.",
	"email-on":          "Email codes are on.",
	"features-saved":    "The features were saved.",
	"imp-ended":         "The impersonation ended.",
	"signed-out":        "You are signed out.",
	"password-set":      "Your password was changed. Sign in with it.",
	"reset-sent":        "If the address has an account, a reset link is on its way.",
	"tenant-created":    "The tenant was created.",
}

// flash is the confirmation the request's done parameter names.
func flash(r *http.Request) string { return flashMessages[r.URL.Query().Get("done")] }
