package stripefake

import (
	"net/http"
	"net/url"
	"sort"
	"time"
)

// Customer is the fake's state of one customer.
type Customer struct {
	ID        string
	SecretKey string
	Name      string
	Email     string
	Metadata  map[string]string
	// PaymentMethods are the ids attached now.
	PaymentMethods []string
}

// Customer returns one customer's state.
func (s *Server) Customer(id string) (Customer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.customers[id]
	if !ok {
		return Customer{}, false
	}
	out := Customer{ID: c.id, SecretKey: c.key, Name: c.name, Email: c.email, Metadata: copyMap(c.metadata)}
	for _, m := range s.methods {
		if m.customer == id {
			out.PaymentMethods = append(out.PaymentMethods, m.id)
		}
	}
	sort.Strings(out.PaymentMethods)
	return out, true
}

type customer struct {
	id, key     string
	name, email string
	metadata    map[string]string
	created     int64
}

type method struct {
	id, key  string
	customer string
	tmpl     template
	created  int64
}

func (s *Server) createCustomer(key string, form url.Values) (any, *apiErr) {
	c := &customer{id: newID("cus_"), key: key, name: form.Get("name"), email: form.Get("email"), metadata: metadata(form), created: time.Now().Unix()}
	s.customers[c.id] = c
	return renderCustomer(c), nil
}

// getMethod finds a test method (pm_card_visa, …) without cloning it:
// only a charge or an attach makes a method of the account.
func (s *Server) getMethod(key, id string) (any, *apiErr) {
	if m, ok := s.methods[id]; ok && m.key == key {
		return renderMethod(m), nil
	}
	if t, ok := testTemplate(id); ok {
		return renderMethod(&method{id: id, key: key, tmpl: t, created: time.Now().Unix()}), nil
	}
	return nil, missing("id", "PaymentMethod", id)
}

func (s *Server) attach(key, id, cusID string) (any, *apiErr) {
	if cusID == "" {
		return nil, invalid(400, "parameter_missing", "customer", "Missing required param: customer.")
	}
	if c, ok := s.customers[cusID]; !ok || c.key != key {
		return nil, missing("customer", "customer", cusID)
	}
	m, ok := s.methods[id]
	if ok && m.key != key {
		ok = false
	}
	if !ok {
		t, test := testTemplate(id)
		if !test {
			return nil, missing("id", "PaymentMethod", id)
		}
		if t.attachDeclines {
			return nil, &apiErr{Type: "card_error", Code: t.code, DeclineCode: t.declineCode, Message: t.message, Param: "", status: http.StatusPaymentRequired}
		}
		m = &method{id: newID("pm_"), key: key, tmpl: t, created: time.Now().Unix()}
		s.methods[m.id] = m
	}
	if m.customer != "" && m.customer != cusID {
		return nil, invalid(400, "", "", "The payment method you provided has already been attached to a customer.")
	}
	m.customer = cusID
	return renderMethod(m), nil
}

// detach refuses a test method (pm_card_visa, …) as one not attached,
// not as a missing one: the id names a method, never attached.
func (s *Server) detach(key, id string) (any, *apiErr) {
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
