package stripefake

import (
	"time"
)

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
