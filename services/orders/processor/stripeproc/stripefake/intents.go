package stripefake

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

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

func (s *Server) getIntent(key, id string) (any, *apiErr) {
	pi, ok := s.intents[id]
	if !ok || pi.key != key {
		return nil, missing("id", "payment_intent", id)
	}
	return s.renderIntent(pi), nil
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
