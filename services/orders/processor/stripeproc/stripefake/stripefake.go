// Package stripefake is a stateful fake of Stripe's API for tests: an
// httptest server that speaks Stripe's form-encoded REST for exactly the
// endpoints stripeproc uses, and answers like a Stripe account in test
// mode. It is test support only: import it from tests, never from
// production code.
//
// stripe-mock (Stripe's own mock) proves that each request is one Stripe
// accepts, but it keeps no state and answers every call from one fixture.
// This fake keeps state, so an end-to-end test can charge, decline, wait
// for settlement, refund and receive signed notifications:
//
//	fake := stripefake.New()
//	defer fake.Close()
//	p := stripeproc.New(stripeproc.Config{APIBase: fake.URL, SecretKey: "sk_test_tenantA"})
//
// Payment methods are Stripe's test-mode ones:
//
//	pm_card_visa, pm_card_mastercard        succeed
//	pm_card_chargeDeclined                  402 card_error card_declined (decline_code generic_decline)
//	pm_card_chargeDeclinedInsufficientFunds 402 card_error card_declined (decline_code insufficient_funds)
//	pm_card_chargeCustomerFail              attaches to a customer, then every charge is declined
//	pm_card_authenticationRequired          on session: requires_action with a client secret;
//	                                        off session: 402 card_error authentication_required
//	pm_usBankAccount…  (any suffix)         processing, until Settle or Fail
//
// As at Stripe, a declined card cannot be attached to a customer (use
// pm_card_chargeCustomerFail for a saved card that declines later), and
// a test method (pm_card_visa, …) used in a charge or an attach is cloned
// into a new payment method with its own pm_ id. Any other pm_ is
// unknown (400 resource_missing on payment_method) unless the fake made
// it.
//
// Each secret key is its own Stripe account: an object made with one key
// is missing (resource_missing) to another. Idempotency keys are kept per
// account: a request repeating one gets the stored answer of the first
// (header Idempotent-Replayed: true) and changes nothing; with other
// parameters it gets 400 idempotency_error. Answers are stored when they
// are 200 or 402, as Stripe stores the result of a request that ran;
// refusals (400) and injected failures are not stored, so a retry runs
// again.
//
// PaymentIntents are found with Stripe's Search API
// (GET /v1/payment_intents/search) by metadata['key']:'value' clauses
// joined by AND, the latest charge expandable; the fake's index is up to
// date at once, where Stripe's may lag by a minute or more.
//
// Parameters the endpoint does not take are refused (400
// parameter_unknown), like stripe-mock and Stripe; the fake is stricter
// than Stripe on a few points: currency must be three lower-case letters
// and confirm must be true.
package stripefake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a running fake Stripe. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the API base to give stripeproc.Config.APIBase.
	URL string

	srv *httptest.Server

	mu            sync.Mutex
	intents       map[string]*intent
	customers     map[string]*customer
	methods       map[string]*method
	refunds       map[string]*refund
	idem          map[idemKey]*stored
	events        []Event
	requests      []Request
	revoked       map[string]bool
	failNext      int
	failStatus    int
	loseNext      int
	refuseRefunds bool
}

// New starts a fake Stripe on a loopback port. Close it when done.
func New() *Server {
	s := &Server{
		intents:   map[string]*intent{},
		customers: map[string]*customer{},
		methods:   map[string]*method{},
		refunds:   map[string]*refund{},
		idem:      map[idemKey]*stored{},
		revoked:   map[string]bool{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server: from then on it is unreachable (connection
// refused), as Stripe is when the network fails. Its state stays
// readable.
func (s *Server) Close() { s.srv.Close() }

// Request is one request the fake received, as sent.
type Request struct {
	Method string
	Path   string
	// SecretKey is the account's key from the Authorization header.
	SecretKey      string
	IdempotencyKey string
	// StripeVersion is the API version the client pinned.
	StripeVersion string
	// Form holds every parameter (body and query), as Stripe reads them:
	// metadata[order_id], payment_method_types[0], ….
	Form url.Values
	// Parsed parameters of the charge, refund and attach requests; zero
	// when absent.
	Amount        int64
	Currency      string
	PaymentMethod string
	Customer      string
	OffSession    bool
	Metadata      map[string]string
	// Status is the answer's HTTP status (0 when the answer was lost).
	Status int
	// Replay is true when the answer was the one stored under the
	// idempotency key, and nothing was done.
	Replay bool
	// Injected is true when the answer came from FailNext.
	Injected bool
	// Lost is true when the request took effect but its answer was
	// dropped (LoseNextResponses).
	Lost bool
}

// Requests returns every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// FailNext makes the next n requests fail with status (500 when 0) and a
// Stripe error body (api_error for 5xx, rate_limit for 429,
// idempotency_key_in_use for 409, invalid_request_error otherwise),
// without taking effect.
func (s *Server) FailNext(n, status int) {
	if status == 0 {
		status = http.StatusInternalServerError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext, s.failStatus = n, status
}

// LoseNextResponses makes the next n requests take effect (and be stored
// under their idempotency key) but cuts their answers: the connection
// closes in the middle of the body, as when a network fails after Stripe
// acted. A retry with the same idempotency key then gets the stored
// answer.
func (s *Server) LoseNextResponses(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseNext = n
}

// RefuseRefunds makes refunds answer 400 invalid_request_error
// (charge_not_refundable) while on.
func (s *Server) RefuseRefunds(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseRefunds = on
}

// RevokeKey makes every request with the secret key answer 401, as
// Stripe does for a rolled or deleted key.
func (s *Server) RevokeKey(secretKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[secretKey] = true
}

// PaymentIntent is the fake's state of one PaymentIntent.
type PaymentIntent struct {
	ID        string
	SecretKey string
	// Status is Stripe's: succeeded, processing, requires_action,
	// requires_payment_method or canceled.
	Status         string
	Amount         int64
	AmountRefunded int64
	Currency       string
	Customer       string
	PaymentMethod  string
	OffSession     bool
	Metadata       map[string]string
	// ChargeID is the successful charge (ch_…), once there is one.
	ChargeID string
	// DisputeID is the charge's dispute (dp_…), once there is one.
	DisputeID string
}

// PaymentIntent returns one PaymentIntent's state.
func (s *Server) PaymentIntent(id string) (PaymentIntent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[id]
	if !ok {
		return PaymentIntent{}, false
	}
	return pi.snapshot(), true
}

// PaymentIntents returns every PaymentIntent, in creation order.
func (s *Server) PaymentIntents() []PaymentIntent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PaymentIntent, 0, len(s.intents))
	for _, pi := range s.intents {
		out = append(out, pi.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return s.intents[out[i].ID].seq < s.intents[out[j].ID].seq })
	return out
}

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

// Refund is the fake's state of one refund.
type Refund struct {
	ID            string
	PaymentIntent string
	Amount        int64
	// Status is succeeded for cards, pending for bank debits.
	Status   string
	Metadata map[string]string
	// Dashboard is true for a refund made with DashboardRefund.
	Dashboard bool
}

// Refunds returns the refunds of one PaymentIntent, oldest first.
func (s *Server) Refunds(paymentIntentID string) []Refund {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Refund
	for _, r := range s.refunds {
		if r.pi == paymentIntentID {
			out = append(out, Refund{ID: r.id, PaymentIntent: r.pi, Amount: r.amount, Status: r.status, Metadata: copyMap(r.metadata), Dashboard: r.dashboard})
		}
	}
	sort.Slice(out, func(i, j int) bool { return s.refunds[out[i].ID].seq < s.refunds[out[j].ID].seq })
	return out
}

// Settle makes a processing (bank debit) or requires_action (the donor
// authenticated) PaymentIntent succeed and returns its
// payment_intent.succeeded event.
func (s *Server) Settle(paymentIntentID string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[paymentIntentID]
	if !ok {
		return Event{}, fmt.Errorf("stripefake: no PaymentIntent %s", paymentIntentID)
	}
	if pi.status != "processing" && pi.status != "requires_action" {
		return Event{}, fmt.Errorf("stripefake: PaymentIntent %s is %s, not processing or requires_action", pi.id, pi.status)
	}
	s.succeed(pi)
	return s.event(pi.key, "payment_intent.succeeded", pi.id, s.renderIntent(pi)), nil
}

// bankFailures are the messages of bank debit failure codes.
var bankFailures = map[string]string{
	"insufficient_funds":   "The customer's account has insufficient funds to cover this payment.",
	"account_closed":       "The customer's bank account has been closed.",
	"no_account":           "The customer's bank account could not be located.",
	"debit_not_authorized": "The customer has notified their bank that this payment was unauthorized.",
}

// Fail makes a processing or requires_action PaymentIntent fail with a
// failure code (insufficient_funds when empty; account_closed,
// no_account, debit_not_authorized, payment_intent_authentication_failure
// …) and returns its payment_intent.payment_failed event. The
// PaymentIntent goes back to requires_payment_method, as at Stripe.
func (s *Server) Fail(paymentIntentID, code string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[paymentIntentID]
	if !ok {
		return Event{}, fmt.Errorf("stripefake: no PaymentIntent %s", paymentIntentID)
	}
	if pi.status != "processing" && pi.status != "requires_action" {
		return Event{}, fmt.Errorf("stripefake: PaymentIntent %s is %s, not processing or requires_action", pi.id, pi.status)
	}
	if code == "" {
		code = "insufficient_funds"
	}
	msg, ok := bankFailures[code]
	if !ok {
		msg = "The payment failed."
	}
	typ := "invalid_request_error"
	if pi.pmType == "card" {
		typ = "card_error"
	}
	pi.status = "requires_payment_method"
	pi.lastError = &apiErr{Type: typ, Code: code, Message: msg}
	pi.nextAction = nil
	return s.event(pi.key, "payment_intent.payment_failed", pi.id, s.renderIntent(pi)), nil
}

// DashboardCancel cancels a PaymentIntent that has not succeeded, as
// someone in the Dashboard (or Stripe, for an abandoned one) does, and
// returns its payment_intent.canceled event.
func (s *Server) DashboardCancel(paymentIntentID string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[paymentIntentID]
	if !ok {
		return Event{}, fmt.Errorf("stripefake: no PaymentIntent %s", paymentIntentID)
	}
	if !cancelable(pi.status) {
		return Event{}, fmt.Errorf("stripefake: PaymentIntent %s is %s and cannot be canceled", pi.id, pi.status)
	}
	pi.status, pi.cancellationReason, pi.nextAction = "canceled", "abandoned", nil
	return s.event(pi.key, "payment_intent.canceled", pi.id, s.renderIntent(pi)), nil
}

// DashboardRefund refunds amount (what is left when 0) of a succeeded
// PaymentIntent outside the API, as someone in the Dashboard does, and
// returns its charge.refunded event, whose amount_refunded is the
// charge's total refunded so far.
func (s *Server) DashboardRefund(paymentIntentID string, amount int64) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[paymentIntentID]
	if !ok {
		return Event{}, fmt.Errorf("stripefake: no PaymentIntent %s", paymentIntentID)
	}
	if pi.status != "succeeded" {
		return Event{}, fmt.Errorf("stripefake: PaymentIntent %s is %s, not succeeded", pi.id, pi.status)
	}
	left := pi.amount - pi.refunded
	if amount == 0 {
		amount = left
	}
	if amount <= 0 || amount > left {
		return Event{}, fmt.Errorf("stripefake: cannot refund %d of PaymentIntent %s, %d left", amount, pi.id, left)
	}
	_, ev := s.refund(pi, amount, nil, true)
	return ev, nil
}

// Dispute opens a dispute of a succeeded PaymentIntent's charge and
// returns its charge.dispute.created event.
func (s *Server) Dispute(paymentIntentID string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[paymentIntentID]
	if !ok {
		return Event{}, fmt.Errorf("stripefake: no PaymentIntent %s", paymentIntentID)
	}
	if pi.charge == "" {
		return Event{}, fmt.Errorf("stripefake: PaymentIntent %s has no successful charge", pi.id)
	}
	if pi.dispute == "" {
		pi.dispute = newID("dp_")
	}
	obj := map[string]any{
		"id": pi.dispute, "object": "dispute", "amount": pi.amount - pi.refunded, "currency": pi.currency,
		"charge": pi.charge, "payment_intent": pi.id, "reason": "fraudulent", "status": "needs_response",
		"livemode": false, "created": time.Now().Unix(), "metadata": map[string]string{},
	}
	return s.event(pi.key, "charge.dispute.created", pi.id, obj), nil
}

// Events returns every event the fake's accounts produced, oldest first:
// those of API requests (a charge's succeeded or payment_failed, a
// cancel's canceled, a refund's charge.refunded) and those of the helpers
// above. Nothing is delivered on its own: a test sends the ones it wants
// (Event.Send).
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// internal state

type intent struct {
	seq                int
	id, key            string
	status             string
	amount, refunded   int64
	currency           string
	customer, pm       string
	pmType             string
	offSession         bool
	setupFutureUsage   string
	description        string
	metadata           map[string]string
	clientSecret       string
	lastError          *apiErr
	nextAction         map[string]any
	charge, dispute    string
	cancellationReason string
	created            int64
}

func (pi *intent) snapshot() PaymentIntent {
	return PaymentIntent{
		ID: pi.id, SecretKey: pi.key, Status: pi.status, Amount: pi.amount, AmountRefunded: pi.refunded,
		Currency: pi.currency, Customer: pi.customer, PaymentMethod: pi.pm, OffSession: pi.offSession,
		Metadata: copyMap(pi.metadata), ChargeID: pi.charge, DisputeID: pi.dispute,
	}
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

type refund struct {
	seq       int
	id, key   string
	pi        string
	amount    int64
	status    string
	metadata  map[string]string
	dashboard bool
	created   int64
}

type idemKey struct{ secretKey, key string }

// stored is an answer kept under an idempotency key, with what the
// request was, to refuse the key's reuse for another request.
type stored struct {
	fingerprint string
	status      int
	body        []byte
}

// behavior is what a test payment method does when charged.
type behavior int

const (
	succeeds behavior = iota
	declines
	needsAuthentication
	processes
)

// template is one of Stripe's test payment methods.
type template struct {
	typ               string
	brand, last4      string
	expMonth, expYear int
	bankName          string
	behavior          behavior
	code, declineCode string
	message           string
	attachDeclines    bool
}

var catalog = map[string]template{
	"pm_card_visa":       {typ: "card", brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
	"pm_card_mastercard": {typ: "card", brand: "mastercard", last4: "4444", expMonth: 12, expYear: 2034},
	"pm_card_chargeDeclined": {typ: "card", brand: "visa", last4: "0002", expMonth: 12, expYear: 2034,
		behavior: declines, code: "card_declined", declineCode: "generic_decline", message: "Your card was declined.", attachDeclines: true},
	"pm_card_chargeDeclinedInsufficientFunds": {typ: "card", brand: "visa", last4: "9995", expMonth: 12, expYear: 2034,
		behavior: declines, code: "card_declined", declineCode: "insufficient_funds", message: "Your card has insufficient funds.", attachDeclines: true},
	"pm_card_chargeCustomerFail": {typ: "card", brand: "visa", last4: "0341", expMonth: 12, expYear: 2034,
		behavior: declines, code: "card_declined", declineCode: "generic_decline", message: "Your card was declined."},
	"pm_card_authenticationRequired": {typ: "card", brand: "visa", last4: "3184", expMonth: 12, expYear: 2034, behavior: needsAuthentication},
}

// bankTemplate is every pm_usBankAccount… method.
var bankTemplate = template{typ: "us_bank_account", bankName: "STRIPE TEST BANK", last4: "6789", behavior: processes}

// testTemplate returns the template of one of Stripe's test methods.
func testTemplate(id string) (template, bool) {
	if t, ok := catalog[id]; ok {
		return t, true
	}
	if strings.HasPrefix(id, "pm_usBankAccount") {
		return bankTemplate, true
	}
	return template{}, false
}

// apiErr is Stripe's error object.
type apiErr struct {
	Type          string         `json:"type"`
	Code          string         `json:"code,omitempty"`
	DeclineCode   string         `json:"decline_code,omitempty"`
	Message       string         `json:"message,omitempty"`
	Param         string         `json:"param,omitempty"`
	PaymentIntent map[string]any `json:"payment_intent,omitempty"`
	status        int
}

func invalid(status int, code, param, msg string) *apiErr {
	return &apiErr{Type: "invalid_request_error", Code: code, Param: param, Message: msg, status: status}
}

func missing(param, what, id string) *apiErr {
	status := http.StatusBadRequest
	if param == "id" {
		status = http.StatusNotFound
	}
	return invalid(status, "resource_missing", param, fmt.Sprintf("No such %s: '%s'", what, id))
}

var seqMu sync.Mutex
var seqN int

// newID returns a Stripe-like id. It is random, so that the ids of two
// fakes in one test (two tenants' end-to-end runs) never collide.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "fake" + hex.EncodeToString(b[:])
}

func nextSeq() int {
	seqMu.Lock()
	defer seqMu.Unlock()
	seqN++
	return seqN
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// HTTP

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(body))
	if err != nil {
		form = url.Values{}
	}
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil {
		for k, v := range q {
			form[k] = append(form[k], v...)
		}
	}
	req := Request{
		Method: r.Method, Path: r.URL.Path,
		SecretKey:      strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		StripeVersion:  r.Header.Get("Stripe-Version"),
		Form:           form,
		Currency:       form.Get("currency"),
		PaymentMethod:  form.Get("payment_method"),
		Customer:       form.Get("customer"),
		OffSession:     form.Get("off_session") == "true",
		Metadata:       metadata(form),
	}
	req.Amount, _ = strconv.ParseInt(form.Get("amount"), 10, 64)

	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Request-Id", newID("req_"))
	w.Header().Set("Content-Type", "application/json")

	if s.failNext > 0 {
		s.failNext--
		req.Status, req.Injected = s.failStatus, true
		s.requests = append(s.requests, req)
		writeJSON(w, s.failStatus, map[string]any{"error": injected(s.failStatus)})
		return
	}

	status, answer, replay := s.answer(r, req, form)
	req.Status, req.Replay = status, replay
	if s.loseNext > 0 {
		s.loseNext--
		req.Status, req.Lost = 0, true
		s.requests = append(s.requests, req)
		cutAnswer(w, status)
		return
	}
	s.requests = append(s.requests, req)
	if replay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// answer runs one request, or replays its stored answer, and returns the
// status and body.
func (s *Server) answer(r *http.Request, req Request, form url.Values) (int, []byte, bool) {
	key := req.SecretKey
	if !(strings.HasPrefix(key, "sk_") || strings.HasPrefix(key, "rk_")) || s.revoked[key] {
		shown := key
		if len(shown) > 8 {
			shown = shown[:8] + "****" + shown[len(shown)-4:]
		}
		return errorBody(invalid(http.StatusUnauthorized, "", "", "Invalid API Key provided: "+shown))
	}
	var ik idemKey
	fingerprint := r.Method + " " + r.URL.Path + "?" + form.Encode()
	if req.IdempotencyKey != "" && r.Method == http.MethodPost {
		ik = idemKey{key, req.IdempotencyKey}
		if st, ok := s.idem[ik]; ok {
			if st.fingerprint != fingerprint {
				status, body, _ := errorBody(&apiErr{Type: "idempotency_error", status: http.StatusBadRequest,
					Message: "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '" + req.IdempotencyKey + "' if you meant to execute a different request."})
				return status, body, false
			}
			return st.status, st.body, true
		}
	}
	obj, aerr := s.route(key, r.Method, r.URL.Path, form)
	var status int
	var body []byte
	if aerr != nil {
		status, body, _ = errorBody(aerr)
	} else {
		status, body = http.StatusOK, mustJSON(obj)
	}
	if ik.key != "" && (status == http.StatusOK || status == http.StatusPaymentRequired) {
		s.idem[ik] = &stored{fingerprint: fingerprint, status: status, body: body}
	}
	return status, body, false
}

func errorBody(e *apiErr) (int, []byte, bool) {
	return e.status, mustJSON(map[string]any{"error": e}), false
}

func injected(status int) *apiErr {
	switch {
	case status >= 500:
		return &apiErr{Type: "api_error", Message: "An unknown error occurred (injected by stripefake)."}
	case status == http.StatusTooManyRequests:
		return &apiErr{Type: "invalid_request_error", Code: "rate_limit", Message: "Too many requests hit the API too quickly (injected by stripefake)."}
	case status == http.StatusConflict:
		return &apiErr{Type: "idempotency_error", Code: "idempotency_key_in_use", Message: "There is currently another in-progress request using this Idempotent Key (injected by stripefake)."}
	}
	return &apiErr{Type: "invalid_request_error", Message: "Injected by stripefake."}
}

// cutAnswer starts an answer and closes the connection in its body. A
// connection closed before any answer would not do: net/http resends a
// request carrying an Idempotency-Key on a new connection by itself, and
// the client would never see the failure.
func cutAnswer(w http.ResponseWriter, status int) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("stripefake: the server cannot cut a connection")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{", status, http.StatusText(status))
	_ = buf.Flush()
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(v))
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// metadata gathers metadata[key] parameters.
func metadata(form url.Values) map[string]string {
	var m map[string]string
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") {
			if m == nil {
				m = map[string]string{}
			}
			m[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	return m
}

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

var reCurrency = regexp.MustCompile(`^[a-z]{3}$`)

// createIntent creates and confirms a PaymentIntent as Stripe does: the
// request is checked, its payment method found (a test method cloned),
// the intent recorded, and its method's behaviour decides the outcome.
func (s *Server) createIntent(key string, form url.Values) (any, *apiErr) {
	amount, e := checkIntentForm(form)
	if e != nil {
		return nil, e
	}
	offSession := form.Get("off_session") == "true"
	cusID := form.Get("customer")
	if cusID != "" {
		if c, ok := s.customers[cusID]; !ok || c.key != key {
			return nil, missing("customer", "customer", cusID)
		}
	}
	pm, e := s.intentMethod(key, form.Get("payment_method"), cusID)
	if e != nil {
		return nil, e
	}
	if e := checkMethodAllowed(form, pm, offSession); e != nil {
		return nil, e
	}
	pi := &intent{
		seq: nextSeq(), id: newID("pi_"), key: key, amount: amount, currency: form.Get("currency"),
		customer: cusID, pm: pm.id, pmType: pm.tmpl.typ, offSession: offSession,
		setupFutureUsage: form.Get("setup_future_usage"), description: form.Get("description"),
		metadata: metadata(form), created: time.Now().Unix(),
	}
	pi.clientSecret = pi.id + "_secret_" + strings.TrimPrefix(newID(""), "fake")
	s.intents[pi.id] = pi
	if e := s.confirm(key, pi, pm.tmpl); e != nil {
		return nil, e
	}
	return s.renderIntent(pi), nil
}

// checkIntentForm checks a create request's own parameters, as Stripe
// refuses them, and returns its amount.
func checkIntentForm(form url.Values) (int64, *apiErr) {
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	switch {
	case !form.Has("amount"):
		return 0, invalid(400, "parameter_missing", "amount", "Missing required param: amount.")
	case err != nil || amount <= 0:
		return 0, invalid(400, "parameter_invalid_integer", "amount", "Invalid positive integer")
	case !reCurrency.MatchString(form.Get("currency")):
		return 0, invalid(400, "", "currency", "Invalid currency: "+form.Get("currency")+". stripefake takes three lower-case letters.")
	case form.Get("currency") == "usd" && amount < 50:
		return 0, invalid(400, "amount_too_small", "amount", "Amount must be at least $0.50 usd")
	case form.Get("confirm") != "true":
		return 0, invalid(400, "", "confirm", "stripefake only creates PaymentIntents with confirm=true.")
	case form.Get("payment_method") == "":
		return 0, invalid(400, "parameter_missing", "payment_method", "Missing required param: payment_method.")
	}
	return amount, nil
}

// intentMethod finds the payment method pmID of the account key for a
// charge of customer cusID: a method of the account (attached to that
// customer, if to any), or a test method (pm_card_visa, …) cloned into
// a method of its own, as at Stripe.
func (s *Server) intentMethod(key, pmID, cusID string) (*method, *apiErr) {
	pm, ok := s.methods[pmID]
	if ok && pm.key != key {
		ok = false
	}
	if ok && pm.customer != "" && pm.customer != cusID {
		return nil, invalid(400, "payment_intent_invalid_parameter", "payment_method",
			"The provided PaymentMethod belongs to a Customer; pass that customer to use it.")
	}
	if ok {
		return pm, nil
	}
	t, test := testTemplate(pmID)
	if !test {
		return nil, missing("payment_method", "PaymentMethod", pmID)
	}
	pm = &method{id: newID("pm_"), key: key, tmpl: t, created: time.Now().Unix()}
	s.methods[pm.id] = pm
	return pm, nil
}

// checkMethodAllowed refuses a method outside the request's
// payment_method_types, and a bank debit confirmed on session without
// the donor's acceptance of its mandate.
func checkMethodAllowed(form url.Values, pm *method, offSession bool) *apiErr {
	if types := form["payment_method_types[0]"]; len(types) > 0 {
		allowed := false
		for k, v := range form {
			if strings.HasPrefix(k, "payment_method_types[") && v[0] == pm.tmpl.typ {
				allowed = true
			}
		}
		if !allowed {
			return invalid(400, "payment_intent_incompatible_payment_method", "payment_method",
				fmt.Sprintf("The PaymentMethod provided (%s) is not allowed for this PaymentIntent.", pm.tmpl.typ))
		}
	}
	if pm.tmpl.typ == "us_bank_account" && !offSession && form.Get("mandate_data[customer_acceptance][type]") == "" {
		return invalid(400, "parameter_missing", "mandate_data",
			"A us_bank_account payment confirmed on session needs mandate_data.")
	}
	return nil
}

// confirm confirms pi as its method's template behaves: a decline (also
// a charge off session that would need authentication), 3-D Secure, a
// bank debit that settles later, or success; each with its event.
func (s *Server) confirm(key string, pi *intent, t template) *apiErr {
	switch {
	case t.behavior == declines:
		return s.decline(pi, &apiErr{Type: "card_error", Code: t.code, DeclineCode: t.declineCode, Message: t.message})
	case t.behavior == needsAuthentication && pi.offSession:
		return s.decline(pi, &apiErr{Type: "card_error", Code: "authentication_required", DeclineCode: "authentication_required",
			Message: "Your card was declined. This transaction requires authentication."})
	case t.behavior == needsAuthentication:
		pi.status = "requires_action"
		pi.nextAction = map[string]any{"type": "use_stripe_sdk", "use_stripe_sdk": map[string]any{"type": "three_d_secure_redirect", "stripe_js": "https://hooks.stripe.com/3d_secure_2/hosted"}}
		s.event(key, "payment_intent.requires_action", pi.id, s.renderIntent(pi))
	case t.behavior == processes:
		pi.status = "processing"
		s.saveMethod(pi)
		s.event(key, "payment_intent.processing", pi.id, s.renderIntent(pi))
	default:
		s.succeed(pi)
		s.event(key, "payment_intent.succeeded", pi.id, s.renderIntent(pi))
	}
	return nil
}

// decline fails a confirmation: the PaymentIntent goes back to
// requires_payment_method and the answer is a 402 card error carrying it.
func (s *Server) decline(pi *intent, e *apiErr) *apiErr {
	pi.status = "requires_payment_method"
	pi.lastError = e
	s.event(pi.key, "payment_intent.payment_failed", pi.id, s.renderIntent(pi))
	e.status = http.StatusPaymentRequired
	out := *e
	out.PaymentIntent = s.renderIntent(pi)
	return &out
}

func (s *Server) succeed(pi *intent) {
	pi.status, pi.nextAction, pi.lastError = "succeeded", nil, nil
	pi.charge = newID("ch_")
	s.saveMethod(pi)
}

// saveMethod attaches the method of a PaymentIntent made with
// setup_future_usage to its customer, once the payment went through (or
// is under way, for a bank debit).
func (s *Server) saveMethod(pi *intent) {
	if pi.customer != "" && pi.setupFutureUsage != "" {
		if m := s.methods[pi.pm]; m != nil && m.customer == "" {
			m.customer = pi.customer
		}
	}
}

func cancelable(status string) bool {
	switch status {
	case "requires_payment_method", "requires_action", "processing":
		return true
	}
	return false
}

func (s *Server) cancelIntent(key, id string) (any, *apiErr) {
	pi, ok := s.intents[id]
	if !ok || pi.key != key {
		return nil, missing("id", "payment_intent", id)
	}
	if !cancelable(pi.status) {
		e := invalid(400, "payment_intent_unexpected_state", "",
			fmt.Sprintf("You cannot cancel this PaymentIntent because it has a status of %s. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.", pi.status))
		e.PaymentIntent = s.renderIntent(pi)
		return nil, e
	}
	pi.status, pi.cancellationReason, pi.nextAction = "canceled", "requested_by_customer", nil
	s.event(key, "payment_intent.canceled", pi.id, s.renderIntent(pi))
	return s.renderIntent(pi), nil
}

// searchIntents answers a PaymentIntent search of one account: the
// query language's metadata['key']:'value' clauses joined by AND (the only
// ones the fake understands; anything else is a 400), newest first,
// limit (1–100, 10 by default) per page, and data.latest_charge as the
// one expansion. Unlike Stripe's, the fake's index never lags.
func (s *Server) searchIntents(key string, form url.Values) (any, *apiErr) {
	match, aerr := parseSearch(form.Get("query"))
	if aerr != nil {
		return nil, aerr
	}
	limit, offset, aerr := searchPage(form)
	if aerr != nil {
		return nil, aerr
	}
	expandCharge := false
	for k, v := range form {
		if strings.HasPrefix(k, "expand[") {
			if v[0] != "data.latest_charge" {
				return nil, invalid(400, "", k, "stripefake expands only data.latest_charge in a search, not "+v[0]+".")
			}
			expandCharge = true
		}
	}
	var found []*intent
	for _, pi := range s.intents {
		if pi.key == key && match(pi.metadata) {
			found = append(found, pi)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].seq > found[j].seq })
	data := []any{}
	for i := offset; i < len(found) && i < offset+limit; i++ {
		obj := s.renderIntent(found[i])
		if expandCharge && found[i].charge != "" {
			obj["latest_charge"] = renderCharge(found[i])
		}
		data = append(data, obj)
	}
	var next any
	more := offset+limit < len(found)
	if more {
		next = "page_" + strconv.Itoa(offset+limit)
	}
	return map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "has_more": more, "next_page": next, "data": data}, nil
}

// reClause is one clause of a search query the fake understands:
// metadata['key']:'value', with \' and \\ escapes in the value.
var reClause = regexp.MustCompile(`^metadata\['([^'\\]+)'\]:'((?:[^'\\]|\\.)*)'$`)

// parseSearch returns the test of a search query: every clause must hold.
func parseSearch(query string) (func(map[string]string) bool, *apiErr) {
	if strings.TrimSpace(query) == "" {
		return nil, invalid(400, "parameter_missing", "query", "Missing required param: query.")
	}
	want := map[string]string{}
	for _, clause := range strings.Split(query, " AND ") {
		m := reClause.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return nil, invalid(400, "", "query", "stripefake's search takes only metadata['key']:'value' clauses joined by AND, not "+clause+".")
		}
		want[m[1]] = strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[2])
	}
	return func(md map[string]string) bool {
		for k, v := range want {
			if got, ok := md[k]; !ok || got != v {
				return false
			}
		}
		return true
	}, nil
}

// searchPage reads a search's limit and page (the offset the fake's
// next_page names).
func searchPage(form url.Values) (limit, offset int, aerr *apiErr) {
	limit = 10
	if form.Has("limit") {
		n, err := strconv.Atoi(form.Get("limit"))
		if err != nil || n < 1 || n > 100 {
			return 0, 0, invalid(400, "", "limit", "This value must be between 1 and 100.")
		}
		limit = n
	}
	if form.Has("page") {
		n, err := strconv.Atoi(strings.TrimPrefix(form.Get("page"), "page_"))
		if err != nil || n < 0 || !strings.HasPrefix(form.Get("page"), "page_") {
			return 0, 0, invalid(400, "", "page", "Invalid page: "+form.Get("page"))
		}
		offset = n
	}
	return limit, offset, nil
}

func (s *Server) createRefund(key string, form url.Values) (any, *apiErr) {
	if s.refuseRefunds {
		return nil, invalid(400, "charge_not_refundable", "", "This charge cannot be refunded (refused by stripefake.RefuseRefunds).")
	}
	piID := form.Get("payment_intent")
	if piID == "" {
		return nil, invalid(400, "parameter_missing", "payment_intent", "Missing required param: payment_intent.")
	}
	pi, ok := s.intents[piID]
	if !ok || pi.key != key {
		return nil, missing("payment_intent", "payment_intent", piID)
	}
	if pi.status != "succeeded" {
		return nil, invalid(400, "payment_intent_unexpected_state", "payment_intent",
			"This PaymentIntent does not have a successful charge to refund.")
	}
	if pi.dispute != "" {
		return nil, invalid(400, "charge_disputed", "", fmt.Sprintf("Charge %s has been charged back; cannot issue a refund.", pi.charge))
	}
	left := pi.amount - pi.refunded
	if left == 0 {
		return nil, invalid(400, "charge_already_refunded", "", fmt.Sprintf("Charge %s has already been refunded.", pi.charge))
	}
	amount := left
	if form.Has("amount") {
		a, err := strconv.ParseInt(form.Get("amount"), 10, 64)
		if err != nil || a <= 0 {
			return nil, invalid(400, "parameter_invalid_integer", "amount", "Invalid positive integer")
		}
		amount = a
	}
	if amount > left {
		return nil, invalid(400, "amount_too_large", "amount",
			fmt.Sprintf("Refund amount (%d) is greater than unrefunded amount on charge (%d)", amount, left))
	}
	re, _ := s.refund(pi, amount, metadata(form), false)
	return re, nil
}

// refund records a refund and its charge.refunded event, and returns the
// refund's JSON and the event.
func (s *Server) refund(pi *intent, amount int64, md map[string]string, dashboard bool) (map[string]any, Event) {
	status := "succeeded"
	if pi.pmType == "us_bank_account" {
		status = "pending"
	}
	re := &refund{seq: nextSeq(), id: newID("re_"), key: pi.key, pi: pi.id, amount: amount, status: status, metadata: md, dashboard: dashboard, created: time.Now().Unix()}
	s.refunds[re.id] = re
	pi.refunded += amount
	ev := s.event(pi.key, "charge.refunded", pi.id, renderCharge(pi))
	return map[string]any{
		"id": re.id, "object": "refund", "amount": amount, "currency": pi.currency, "charge": pi.charge,
		"payment_intent": pi.id, "status": status, "metadata": nonNil(md), "created": re.created,
	}, ev
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

// rendering

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) renderIntent(pi *intent) map[string]any {
	var lastErr any
	if pi.lastError != nil {
		e := *pi.lastError
		e.PaymentIntent = nil
		lastErr = e
	}
	var nextAction any
	if pi.nextAction != nil {
		nextAction = pi.nextAction
	}
	var canceledAt any
	if pi.status == "canceled" {
		canceledAt = time.Now().Unix()
	}
	received := int64(0)
	if pi.status == "succeeded" {
		received = pi.amount
	}
	return map[string]any{
		"id": pi.id, "object": "payment_intent", "amount": pi.amount, "amount_received": received,
		"currency": pi.currency, "status": pi.status, "customer": nullable(pi.customer),
		"payment_method": nullable(pi.pm), "payment_method_types": []string{pi.pmType},
		"client_secret": pi.clientSecret, "next_action": nextAction, "last_payment_error": lastErr,
		"latest_charge": nullable(pi.charge), "metadata": nonNil(pi.metadata), "description": nullable(pi.description),
		"setup_future_usage": nullable(pi.setupFutureUsage), "capture_method": "automatic_async",
		"confirmation_method": "automatic", "canceled_at": canceledAt, "cancellation_reason": nullable(pi.cancellationReason),
		"livemode": false, "created": pi.created,
	}
}

func renderCharge(pi *intent) map[string]any {
	return map[string]any{
		"id": pi.charge, "object": "charge", "amount": pi.amount, "amount_captured": pi.amount,
		"amount_refunded": pi.refunded, "refunded": pi.refunded == pi.amount, "currency": pi.currency,
		"payment_intent": pi.id, "payment_method": pi.pm, "customer": nullable(pi.customer), "status": "succeeded",
		"paid": true, "captured": true, "disputed": pi.dispute != "", "metadata": nonNil(pi.metadata),
		"livemode": false, "created": pi.created,
	}
}

func renderCustomer(c *customer) map[string]any {
	return map[string]any{
		"id": c.id, "object": "customer", "name": nullable(c.name), "email": nullable(c.email),
		"metadata": nonNil(c.metadata), "livemode": false, "created": c.created,
	}
}

func renderMethod(m *method) map[string]any {
	out := map[string]any{
		"id": m.id, "object": "payment_method", "type": m.tmpl.typ, "customer": nullable(m.customer),
		"metadata": map[string]string{}, "livemode": false, "created": m.created,
		"billing_details": map[string]any{"address": nil, "email": nil, "name": nil, "phone": nil},
	}
	switch m.tmpl.typ {
	case "card":
		out["card"] = map[string]any{
			"brand": m.tmpl.brand, "display_brand": m.tmpl.brand, "last4": m.tmpl.last4,
			"exp_month": m.tmpl.expMonth, "exp_year": m.tmpl.expYear, "funding": "credit", "country": "US",
		}
	case "us_bank_account":
		out["us_bank_account"] = map[string]any{
			"bank_name": m.tmpl.bankName, "last4": m.tmpl.last4, "account_type": "checking",
			"account_holder_type": "individual", "routing_number": "110000000",
		}
	}
	return out
}
