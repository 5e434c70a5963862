package stripefake

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"time"
)

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
