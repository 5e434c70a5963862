package gateway

import (
	"embed"
	"html/template"
	"net/http"
	"strings"

	"github.com/almoner/almoner/pkg/problem"
)

//go:embed openapi/openapi.json
var openAPIDoc []byte

// docsite holds the reference page and its script, the stylesheet of the
// error pages and Scalar's bundle (docsite/scalar, copied from the pinned
// npm package by scripts/docs-viewer.sh): /docs needs nothing from outside
// the binary.
//
//go:embed docsite/index.html docsite/docs.css docsite/docs.js docsite/scalar/standalone.js
var docsite embed.FS

// referencePage is /docs: Scalar's viewer of /openapi.json under a line of
// links to the error pages.
var referencePage = template.Must(template.ParseFS(docsite, "docsite/index.html"))

var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Name}} — Almoner errors</title>
<link rel="stylesheet" href="/docs/docs.css"><link rel="icon" href="data:,"></head>
<body><main>
<p><a href="/docs">API reference</a></p>
<h1>{{.Title}}</h1>
<p><code>type</code>: <code>{{.Type}}</code></p>
<p>{{.Explanation}}</p>
<p>Every error is an RFC 7807 problem document with Content-Type <code>application/problem+json</code>:
<code>type</code>, <code>title</code>, <code>status</code>, <code>instance</code>, <code>traceId</code>
(quote it to support) and, for validation failures, <code>errors</code>.</p>
</main></body></html>
`))

// docsHandler serves the documentation site: /openapi.json (the document
// generated from the protos), /docs (Scalar's API reference rendering it in
// the browser, every asset embedded in the binary) and /errors/<category>
// (the pages the problem `type` URIs point at).
func (g *Gateway) docsHandler(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	switch {
	case p == "/openapi.json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(openAPIDoc)
	case p == "/docs" || p == "/docs/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_ = referencePage.Execute(w, problem.Categories)
	case p == "/docs/scalar.js":
		serveAsset(w, "docsite/scalar/standalone.js", "text/javascript; charset=utf-8")
	case p == "/docs/docs.js":
		serveAsset(w, "docsite/docs.js", "text/javascript; charset=utf-8")
	case p == "/docs/docs.css":
		serveAsset(w, "docsite/docs.css", "text/css; charset=utf-8")
	case strings.HasPrefix(p, "/errors/"):
		name := strings.TrimPrefix(p, "/errors/")
		for _, c := range problem.Categories {
			if c.Name == name {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_ = errorPage.Execute(w, map[string]string{
					"Name": c.Name, "Title": c.Title, "Explanation": c.Explanation,
					"Type": g.problems.New(c.Name, 0, "").Type,
				})
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}

func serveAsset(w http.ResponseWriter, name, contentType string) {
	b, err := docsite.ReadFile(name)
	if err != nil {
		http.Error(w, "missing asset", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}
