package gateway

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/almoner/almoner/gateway/internal/httpmap"
)

// Route families: grpc-gateway's mux tries every pattern of a method in
// turn until one matches, and each pattern it tries allocates (its match
// stack and captures, and the error check of a miss). With every service's
// routes on one mux, GET …/api-keys tried about sixty patterns first:
// 142 allocations and 20-49 µs per request on the benchmark machine.
//
// A family is the routes under one resource, /api/tenants/{tenant_id}/<r>/…:
// each gets a mux of its own holding only the route sets (a proto
// service's routes, or one of the gateway's own) with a route that can
// match a path of that resource, registered in the same order as on the
// full mux. A pattern of a set left out cannot match the path, so it could
// never have answered it, nor made a 405 of it: the family's mux answers
// exactly what the full mux would (TestFamiliesRouteAsTheFullMux). Any
// other path (/api/auth, /api/admin, an unknown resource, an escaped path)
// goes to the full mux.

// familyOf returns the resource segment of a path under
// /api/tenants/{tenant_id}/, or "".
func familyOf(path string) string {
	rest, ok := strings.CutPrefix(path, tenantsPrefix+"/")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	r, _, _ := strings.Cut(rest, "/")
	return r
}

// muxFor returns the mux that serves r: its family's, or the full mux.
func (g *Gateway) muxFor(r *http.Request) *runtime.ServeMux {
	if g.families != nil && r.URL.RawPath == "" {
		if m := g.families[familyOf(r.URL.Path)]; m != nil {
			return m
		}
	}
	return g.mux
}

// buildFamilies registers a family mux for every resource the route sets
// serve under /api/tenants/{tenant_id}/. It builds none, and every
// request goes to the full mux, when a route cannot be told apart by its
// resource (a template with a segment pattern, a wildcard or a verb).
func (g *Gateway) buildFamilies(ctx context.Context, sets []boundSet) error {
	byService := map[string][]string{}
	for _, b := range httpmap.Bindings(protoregistry.GlobalFiles) {
		name := string(b.Method.Parent().FullName())
		byService[name] = append(byService[name], b.Template)
	}
	templates := make([][]string, len(sets))
	resources := map[string]bool{}
	for i, s := range sets {
		templates[i] = s.templates
		if s.service != "" {
			templates[i] = byService[s.service]
		}
		for _, t := range templates[i] {
			segs, ok := plainSegments(t)
			if !ok {
				return nil
			}
			if len(segs) >= 4 && segs[0] == "api" && segs[1] == "tenants" && !isVariable(segs[3]) {
				resources[segs[3]] = true
			}
		}
	}
	families := map[string]*runtime.ServeMux{}
	for _, resource := range slices.Sorted(maps.Keys(resources)) {
		mux := g.newMux()
		for i, s := range sets {
			// A set whose routes the descriptors do not list could serve
			// anything: it joins every family.
			if len(templates[i]) > 0 && !slices.ContainsFunc(templates[i], func(t string) bool { return mayServe(t, resource) }) {
				continue
			}
			if err := s.register(ctx, mux); err != nil {
				return err
			}
		}
		families[resource] = mux
	}
	g.families = families
	return nil
}

// plainSegments splits a template into its segments, or reports false
// when it has anything but literals and bare variables ({name}): those
// could span or match segments in ways this file does not follow.
func plainSegments(t string) ([]string, bool) {
	if !strings.HasPrefix(t, "/") || strings.ContainsAny(t, "=*:") {
		return nil, false
	}
	return strings.Split(t[1:], "/"), true
}

func isVariable(seg string) bool { return strings.HasPrefix(seg, "{") }

// mayServe reports whether template t can match a path under
// /api/tenants/{tenant_id}/<resource>/: one with at least four segments
// (it has no wildcard), whose first, second and fourth are variables or
// those very literals.
func mayServe(t, resource string) bool {
	segs, ok := plainSegments(t)
	if !ok {
		return true
	}
	if len(segs) < 4 {
		return false
	}
	return segmentMatches(segs[0], "api") && segmentMatches(segs[1], "tenants") && segmentMatches(segs[3], resource)
}

// segmentMatches reports whether a template's segment can match literal.
func segmentMatches(seg, literal string) bool { return isVariable(seg) || seg == literal }
