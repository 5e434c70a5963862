package gateway

import (
	"net/http"
	"strings"

	"github.com/almoner/almoner/gateway/console"
)

// The Content-Security-Policy of each class of response. An API response
// (JSON, a problem document, a file export) is never meant to be rendered
// as a page: it may load nothing and be framed by nothing, so a document
// a browser is tricked into opening runs no script and cannot be overlaid
// (clickjacking). The documentation pages load their own assets only.
const (
	apiCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	// errorPageCSP: the error pages are HTML with a stylesheet and no
	// script.
	errorPageCSP = "default-src 'none'; style-src 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	// docsCSP is /docs: Scalar's bundle and the page's own script, both
	// served files (docsite/docs.js), so script-src needs no
	// 'unsafe-inline' and no inline script can run. Styles keep it:
	// Scalar's components insert <style> elements as they mount, and a
	// style cannot run code. The document and the error pages are fetched
	// from this origin only (connect-src), fonts and icons are data: URIs
	// in the bundle.
	docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
		"font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)

// secureHeaders sets the browser security headers on every response, in
// this one place, before any handler runs (a handler may still replace
// Cache-Control, as the documentation's public, cacheable pages do):
//
//   - X-Content-Type-Options: nosniff everywhere, so a browser never runs
//     a JSON or CSV body as script or renders it as HTML;
//   - a Content-Security-Policy by class (apiCSP, errorPageCSP, docsCSP),
//     each with frame-ancestors 'none', and X-Frame-Options: DENY for
//     browsers that know only that;
//   - Cache-Control: no-store by default: every tenant's data, and every
//     answer under /api, stays out of shared and browser caches.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", pagePolicy(r.URL.Path))
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// pagePolicy is the Content-Security-Policy of a path's class.
func pagePolicy(path string) string {
	switch {
	case path == "/docs" || strings.HasPrefix(path, "/docs/"):
		return docsCSP
	case strings.HasPrefix(path, "/errors/"):
		return errorPageCSP
	case console.Owns(path):
		// The staff console's pages and assets (gateway/console).
		return console.CSP
	default:
		return apiCSP
	}
}
