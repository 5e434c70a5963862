package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/almoner/almoner/pkg/problem"
)

// routed is the mux's middleware: it runs once a request has matched a
// route, before the route's handler. A request that only asks which
// methods its path accepts (allowedMethods) stops here; every other one
// has its query string checked against the route's request (a parameter
// it does not read is a 400, before any body is read), its body admitted
// (admitBody) and given the route's decoding options, and goes on; a
// route that streams its body (streamedRoutes) goes on at once.
//
// The mux wraps each route's handler in it once, when the route is
// registered, so each closure serves one method and one pattern: what
// the route is (its binding, rule and body handling) is worked out on its
// first request and kept, instead of rendering the pattern and rewriting
// it with a regular expression on every request.
func (g *Gateway) routed(next runtime.HandlerFunc) runtime.HandlerFunc {
	var known atomic.Pointer[routeFacts]
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p, ok := r.Context().Value(routeProbeKey{}).(*routeProbe); ok {
			p.matched = true
			if pat, ok := runtime.HTTPPattern(r.Context()); ok {
				p.pattern = pat.String()
			}
			return
		}
		f := known.Load()
		if f == nil || f.binding.method != r.Method {
			// The method check keeps this right even if a closure
			// were ever to serve a second method.
			f = factsOf(r)
			known.Store(f)
		}
		if f.streams {
			// The handler reads the body as a stream, and the query.
			next(w, r, params)
			return
		}
		rule := f.rule
		if rule != nil {
			if err := rule.checkQuery(r.URL.RawQuery); err != nil {
				closeUnread(w, r)
				g.handleError(r.Context(), g.mux, codec{}, w, r, err)
				return
			}
		}
		g.admitBody(w, r, f.rawTypes, func(r *http.Request) {
			if b, ok := r.Body.(*bufferedBody); ok && rule != nil {
				if rule.bodyField == "" {
					if err := rule.checkBodyless(b.data); err != nil {
						g.handleError(r.Context(), g.mux, codec{}, w, r, err)
						return
					}
				}
				b.opts = rule.body
			}
			next(w, r, params)
		})
	}
}

// routeFacts is what routed needs to know of a matched route.
type routeFacts struct {
	binding routeBinding
	// streams: the handler reads the body itself (streamedRoutes).
	streams bool
	// rule is the route's request rule; nil for routes the protos do not
	// bind (processor notifications).
	rule *requestRule
	// rawTypes are the media types of a route whose body is a file
	// (rawBodyRoutes); nil for JSON.
	rawTypes []string
}

// factsOf reads the facts of the route r matched.
func factsOf(r *http.Request) *routeFacts {
	f := &routeFacts{binding: routeBinding{method: r.Method}}
	p, ok := runtime.HTTPPattern(r.Context())
	if !ok {
		return f
	}
	f.binding.template = bareTemplate(p.String())
	f.streams = streamedRoutes[f.binding]
	f.rule = requestRules()[f.binding]
	f.rawTypes = rawBodyRoutes[f.binding]
	return f
}

type routeProbeKey struct{}

// routeProbe asks the mux whether a method and path match a route, and
// which pattern matched.
type routeProbe struct {
	matched bool
	pattern string
}

// probeMethods are the methods a 405's Allow header may name: those the
// gateway's routes use (grpc-gateway routes no HEAD or OPTIONS).
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods returns the methods the mux routes for r's path, asking
// the mux itself (grpc-gateway keeps its routes private): each probe is a
// copy of r with another method and no body, which routed stops before
// any handler runs and handleRoutingError answers with nothing. Only a 405
// pays for it.
func (g *Gateway) allowedMethods(r *http.Request) []string {
	var allowed []string
	for _, m := range probeMethods {
		p := &routeProbe{}
		probe := r.Clone(context.WithValue(r.Context(), routeProbeKey{}, p))
		probe.Method, probe.Header, probe.Body, probe.ContentLength = m, http.Header{}, http.NoBody, 0
		g.mux.ServeHTTP(discardResponse{}, probe)
		if p.matched {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// isProbe reports whether r is one of allowedMethods' probes.
func isProbe(r *http.Request) bool {
	_, ok := r.Context().Value(routeProbeKey{}).(*routeProbe)
	return ok
}

// writeMethodNotAllowed answers 405 naming the path's methods in Allow
// (RFC 9110 §15.5.6).
func (g *Gateway) writeMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", strings.Join(g.allowedMethods(r), ", "))
	g.writeProblem(w, r, g.problems.New(problem.CategoryMethodNotAllowed, http.StatusMethodNotAllowed, "Method Not Allowed"))
}

// discardResponse is where probes' responses (none, normally) go.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}
