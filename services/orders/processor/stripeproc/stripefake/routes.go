package stripefake

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// call is a request as an endpoint's handler takes it.
type call struct {
	// key is the account's secret key.
	key string
	// id is the {id} of the path; empty when the path has none.
	id   string
	form url.Values
}

// endpoint is one operation of Stripe's API that the fake serves.
type endpoint struct {
	// params are the parameters it takes; a trailing "[" takes any key
	// under it.
	params []string
	handle func(s *Server, c call) (any, *apiErr)
}

// endpoints are keyed by method and path pattern, as Stripe's reference
// names them.
var endpoints = map[string]endpoint{
	"POST /v1/payment_intents": {
		params: []string{"amount", "currency", "confirm", "payment_method", "payment_method_types[", "customer",
			"description", "metadata[", "off_session", "setup_future_usage", "mandate_data[customer_acceptance][type]",
			"mandate_data[customer_acceptance][online][ip_address]", "mandate_data[customer_acceptance][online][user_agent]",
			"mandate_data[customer_acceptance][accepted_at]"},
		handle: func(s *Server, c call) (any, *apiErr) { return s.createIntent(c.key, c.form) },
	},
	"GET /v1/payment_intents/search": {
		params: []string{"query", "limit", "page", "expand["},
		handle: func(s *Server, c call) (any, *apiErr) { return s.searchIntents(c.key, c.form) },
	},
	"GET /v1/payment_intents/{id}": {
		handle: func(s *Server, c call) (any, *apiErr) { return s.getIntent(c.key, c.id) },
	},
	"POST /v1/payment_intents/{id}/cancel": {
		params: []string{"cancellation_reason"},
		handle: func(s *Server, c call) (any, *apiErr) { return s.cancelIntent(c.key, c.id) },
	},
	"POST /v1/refunds": {
		params: []string{"payment_intent", "amount", "metadata[", "reason"},
		handle: func(s *Server, c call) (any, *apiErr) { return s.createRefund(c.key, c.form) },
	},
	"POST /v1/customers": {
		params: []string{"name", "email", "description", "metadata["},
		handle: func(s *Server, c call) (any, *apiErr) { return s.createCustomer(c.key, c.form) },
	},
	"GET /v1/payment_methods/{id}": {
		handle: func(s *Server, c call) (any, *apiErr) { return s.getMethod(c.key, c.id) },
	},
	"POST /v1/payment_methods/{id}/attach": {
		params: []string{"customer"},
		handle: func(s *Server, c call) (any, *apiErr) { return s.attach(c.key, c.id, c.form.Get("customer")) },
	},
	"POST /v1/payment_methods/{id}/detach": {
		handle: func(s *Server, c call) (any, *apiErr) { return s.detach(c.key, c.id) },
	},
}

// paths are the path patterns of the endpoints in the order a path is
// tried against them: the search comes before {id}, which would take
// "search" for an id. A path takes its pattern whatever the method, so a
// method the pattern does not serve is a 404, as an unknown path is.
var paths = compilePaths(
	"/v1/payment_intents",
	"/v1/refunds",
	"/v1/customers",
	"/v1/payment_intents/search",
	"/v1/payment_intents/{id}/cancel",
	"/v1/payment_intents/{id}",
	"/v1/payment_methods/{id}/attach",
	"/v1/payment_methods/{id}/detach",
	"/v1/payment_methods/{id}",
)

type pathPattern struct {
	pattern string
	re      *regexp.Regexp
}

// compilePaths makes each pattern a regular expression matching the
// whole path, {id} being one segment.
func compilePaths(patterns ...string) []pathPattern {
	out := make([]pathPattern, len(patterns))
	for i, p := range patterns {
		expr := strings.Replace(regexp.QuoteMeta(p), `\{id\}`, `([^/]+)`, 1)
		out[i] = pathPattern{pattern: p, re: regexp.MustCompile("^" + expr + "$")}
	}
	return out
}

// matchPath returns the pattern a path takes and the {id} in it; the
// pattern is empty when the fake serves no such path.
func matchPath(path string) (pattern, id string) {
	for _, p := range paths {
		m := p.re.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		if len(m) > 1 {
			id = m[1]
		}
		return p.pattern, id
	}
	return "", ""
}

// checkParams refuses the first unknown parameter in name order, so that
// the answer to a request does not depend on map order.
func checkParams(allowed []string, form url.Values) *apiErr {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
next:
	for _, k := range names {
		for _, a := range allowed {
			if k == a || (strings.HasSuffix(a, "[") && strings.HasPrefix(k, a) && strings.HasSuffix(k, "]")) {
				continue next
			}
		}
		return invalid(http.StatusBadRequest, "parameter_unknown", k, "Received unknown parameter: "+k)
	}
	return nil
}

func (s *Server) route(key, verb, path string, form url.Values) (any, *apiErr) {
	pattern, id := matchPath(path)
	ep, ok := endpoints[verb+" "+pattern]
	if !ok {
		return nil, invalid(http.StatusNotFound, "", "", fmt.Sprintf("Unrecognized request URL (%s: %s).", verb, path))
	}
	if err := checkParams(ep.params, form); err != nil {
		return nil, err
	}
	return ep.handle(s, call{key: key, id: id, form: form})
}
