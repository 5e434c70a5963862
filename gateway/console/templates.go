package console

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// pageNames are the templates under templates/, each parsed with the
// layout.
var pageNames = []string{"message", "signin", "verify", "accept", "reset", "security", "picker", "dashboard",
	"keys", "webhooks", "webhook", "users", "confirm", "admin", "admintenant"}

func parsePages(funcs template.FuncMap) map[string]*template.Template {
	out := make(map[string]*template.Template, len(pageNames))
	for _, n := range pageNames {
		out[n] = template.Must(template.New(n).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n+".html"))
	}
	return out
}

func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"asset": func(name string) string { return c.assets.url(name) },
		"when":  when,
		"join":  strings.Join,
		"codesFile": func(codes []string) template.URL {
			text := "Almoner recovery codes. Each works once.\n\n" + strings.Join(codes, "\n") + "\n"
			// Only the codes, which are letters, digits and hyphens,
			// escaped as a data: URL for the download link.
			return template.URL("data:text/plain;charset=utf-8," + url.PathEscape(text)) // escaped, a fixed scheme
		},
		"status": func(code *int) string {
			if code == nil {
				return "—"
			}
			return strconv.Itoa(*code)
		},
		"tenantPath": consolePath,
		"pathEscape": url.PathEscape,
	}
}

// when writes a time in UTC, or a dash for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}
