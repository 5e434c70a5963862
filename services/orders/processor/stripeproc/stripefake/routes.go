package stripefake

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

var (
	reIntent       = regexp.MustCompile(`^/v1/payment_intents/([^/]+)$`)
	reIntentCancel = regexp.MustCompile(`^/v1/payment_intents/([^/]+)/cancel$`)
	reMethod       = regexp.MustCompile(`^/v1/payment_methods/([^/]+)$`)
	reMethodAction = regexp.MustCompile(`^/v1/payment_methods/([^/]+)/(attach|detach)$`)
)

// params lists the parameters each endpoint takes; a trailing "[" takes
// any key under it.
var params = map[string][]string{
	"POST /v1/payment_intents": {"amount", "currency", "confirm", "payment_method", "payment_method_types[", "customer",
		"description", "metadata[", "off_session", "setup_future_usage", "mandate_data[customer_acceptance][type]",
		"mandate_data[customer_acceptance][online][ip_address]", "mandate_data[customer_acceptance][online][user_agent]",
		"mandate_data[customer_acceptance][accepted_at]"},
	"GET /v1/payment_intents/search":       {"query", "limit", "page", "expand["},
	"GET /v1/payment_intents/{id}":         {},
	"POST /v1/payment_intents/{id}/cancel": {"cancellation_reason"},
	"POST /v1/refunds":                     {"payment_intent", "amount", "metadata[", "reason"},
	"POST /v1/customers":                   {"name", "email", "description", "metadata["},
	"GET /v1/payment_methods/{id}":         {},
	"POST /v1/payment_methods/{id}/attach": {"customer"},
	"POST /v1/payment_methods/{id}/detach": {},
}

func checkParams(endpoint string, form url.Values) *apiErr {
	allowed := params[endpoint]
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
	var endpoint, id string
	switch {
	case path == "/v1/payment_intents" || path == "/v1/refunds" || path == "/v1/customers":
		endpoint = verb + " " + path
	case path == "/v1/payment_intents/search":
		endpoint = verb + " " + path
	case reIntentCancel.MatchString(path):
		endpoint, id = verb+" /v1/payment_intents/{id}/cancel", reIntentCancel.FindStringSubmatch(path)[1]
	case reIntent.MatchString(path):
		endpoint, id = verb+" /v1/payment_intents/{id}", reIntent.FindStringSubmatch(path)[1]
	case reMethodAction.MatchString(path):
		m := reMethodAction.FindStringSubmatch(path)
		endpoint, id = verb+" /v1/payment_methods/{id}/"+m[2], m[1]
	case reMethod.MatchString(path):
		endpoint, id = verb+" /v1/payment_methods/{id}", reMethod.FindStringSubmatch(path)[1]
	}
	if _, ok := params[endpoint]; !ok {
		return nil, invalid(http.StatusNotFound, "", "", fmt.Sprintf("Unrecognized request URL (%s: %s).", verb, path))
	}
	if err := checkParams(endpoint, form); err != nil {
		return nil, err
	}
	switch endpoint {
	case "POST /v1/payment_intents":
		return s.createIntent(key, form)
	case "GET /v1/payment_intents/search":
		return s.searchIntents(key, form)
	case "GET /v1/payment_intents/{id}":
		pi, ok := s.intents[id]
		if !ok || pi.key != key {
			return nil, missing("id", "payment_intent", id)
		}
		return s.renderIntent(pi), nil
	case "POST /v1/payment_intents/{id}/cancel":
		return s.cancelIntent(key, id)
	case "POST /v1/refunds":
		return s.createRefund(key, form)
	case "POST /v1/customers":
		c := &customer{id: newID("cus_"), key: key, name: form.Get("name"), email: form.Get("email"), metadata: metadata(form), created: time.Now().Unix()}
		s.customers[c.id] = c
		return renderCustomer(c), nil
	case "GET /v1/payment_methods/{id}":
		if m, ok := s.methods[id]; ok && m.key == key {
			return renderMethod(m), nil
		}
		if t, ok := testTemplate(id); ok {
			return renderMethod(&method{id: id, key: key, tmpl: t, created: time.Now().Unix()}), nil
		}
		return nil, missing("id", "PaymentMethod", id)
	case "POST /v1/payment_methods/{id}/attach":
		return s.attach(key, id, form.Get("customer"))
	case "POST /v1/payment_methods/{id}/detach":
		m, ok := s.methods[id]
		if !ok || m.key != key {
			if _, test := testTemplate(id); !test {
				return nil, missing("id", "PaymentMethod", id)
			}
		}
		if !ok || m.customer == "" {
			return nil, invalid(http.StatusBadRequest, "", "", "The payment method you provided is not attached to a customer so detachment is impossible.")
		}
		m.customer = ""
		return renderMethod(m), nil
	}
	return nil, invalid(http.StatusNotFound, "", "", "Unrecognized request URL.")
}
