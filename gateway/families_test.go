package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/almoner/almoner/gateway/internal/httpmap"
)

// TestFamiliesRouteAsTheFullMux asks the full mux and the mux muxFor
// picks the same question for every route's path, under every method and
// with a few changes that make it match nothing or something else: the
// same pattern must match, or none. A family that left out a service
// whose route can match fails here.
func TestFamiliesRouteAsTheFullMux(t *testing.T) {
	g, _ := startEdge(t, Config{})
	if len(g.families) == 0 {
		t.Fatal("no families: every request goes through the full mux")
	}
	for _, want := range []string{"api-keys", "shipments", "imports", "contacts"} {
		if g.families[want] == nil {
			t.Errorf("no family for %s", want)
		}
	}
	var templates []string
	for _, b := range httpmap.Bindings(protoregistry.GlobalFiles) {
		templates = append(templates, b.Template)
	}
	templates = append(templates, stripeNotificationPath, importUploadPath)
	variable := regexp.MustCompile(`\{[^}]*\}`)
	const tenant = "0193a000-0000-7000-8000-000000000001"
	var paths []string
	for _, tmpl := range templates {
		p := strings.Replace(tmpl, "{tenant_id}", tenant, 1)
		p = variable.ReplaceAllString(p, "0193a000-0000-7000-8000-0000000000aa")
		paths = append(paths, p, p+"/", p+"/extra", p+"/pick-list", p+"/0193a000-0000-7000-8000-0000000000bb", strings.TrimSuffix(p, "/"+lastSegment(p)))
	}
	paths = append(paths, "/api/tenants/"+tenant+"/no-such-resource", "/api/tenants/"+tenant+"/", "/api/tenants/"+tenant,
		"/api/tenants/"+tenant+"/api-keys%2Fx", "/api/tenants/"+tenant+"/api%2Dkeys", "/api/tenants//api-keys")
	families := 0
	for _, path := range paths {
		for _, m := range probeMethods {
			r := httptest.NewRequestWithContext(t.Context(), m, path, nil)
			if g.muxFor(r) != g.mux {
				families++
			}
			full, fam := probe(g.mux, r), probe(g.muxFor(r), r)
			if full != fam {
				t.Errorf("%s %s: the full mux matches %q, its family %q", m, path, full, fam)
			}
		}
	}
	if families == 0 {
		t.Error("no path went through a family")
	}
}

// probe returns the pattern mux matches r with, or "" for none.
func probe(mux http.Handler, r *http.Request) string {
	p := &routeProbe{}
	mux.ServeHTTP(discardResponse{}, r.Clone(context.WithValue(r.Context(), routeProbeKey{}, p)))
	if !p.matched {
		return ""
	}
	return p.pattern
}

func lastSegment(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func TestFamilyOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/tenants/t/api-keys":         "api-keys",
		"/api/tenants/t/api-keys/k":       "api-keys",
		"/api/tenants/t/shipments/s/pack": "shipments",
		"/api/tenants/t":                  "",
		"/api/tenants/t/":                 "",
		"/api/tenants":                    "",
		"/api/admin/tenants/t":            "",
		"/api/tenantsx/t/api-keys":        "",
	} {
		if got := familyOf(path); got != want {
			t.Errorf("familyOf(%q) = %q, want %q", path, got, want)
		}
	}
}
