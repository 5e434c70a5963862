package stripefake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
)

// Event is a Stripe event the fake produced, unsigned. Sign or Send it
// with the webhook endpoint's signing secret; sending it again is
// Stripe's redelivery of the same event (same evt_ id).
type Event struct {
	// ID is the event's id (evt_…), unique to this event.
	ID string
	// Type is Stripe's event type (payment_intent.succeeded, …).
	Type string
	// PaymentIntent is the PaymentIntent the event is about.
	PaymentIntent string
	// SecretKey is the account the event belongs to.
	SecretKey string
	// APIVersion renders the event; stripe-go's version by default. Set
	// an older one to act as an account pinned to it.
	APIVersion string
	// Created is the event's time.
	Created time.Time
	// Object is data.object: the PaymentIntent, charge or dispute as it
	// was when the event happened.
	Object json.RawMessage
}

// event records an event of one account and returns it.
func (s *Server) event(key, typ, piID string, object any) Event {
	raw, err := json.Marshal(object)
	if err != nil {
		panic(err)
	}
	ev := Event{
		ID: newID("evt_"), Type: typ, PaymentIntent: piID, SecretKey: key,
		APIVersion: stripe.APIVersion, Created: time.Now(), Object: raw,
	}
	s.events = append(s.events, ev)
	return ev
}

// Payload is the event's JSON as Stripe posts it.
func (e Event) Payload() []byte {
	b, err := json.Marshal(map[string]any{
		"id": e.ID, "object": "event", "type": e.Type, "api_version": e.APIVersion,
		"created": e.Created.Unix(), "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data":    map[string]any{"object": e.Object},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// Sign returns the event's body and its Stripe-Signature header, signed
// now with the endpoint's secret (whsec_…).
func (e Event) Sign(secret string) (body []byte, signature string) {
	return e.SignAt(secret, time.Now())
}

// SignAt signs at a given time: a time more than five minutes ago makes
// a notification the receiver must refuse as stale.
func (e Event) SignAt(secret string, at time.Time) (body []byte, signature string) {
	body = e.Payload()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	return body, signed.Header
}

// Send POSTs the event, signed now with secret, to url as Stripe does
// (Content-Type application/json, Stripe-Signature header) and returns
// the receiver's status.
func (e Event) Send(ctx context.Context, url, secret string) (int, error) {
	body, sig := e.Sign(secret)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", sig)
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("stripefake: send %s to %s: %w", e.ID, url, err)
	}
	defer func() { _ = res.Body.Close() }() // drained below; nothing to do with a close error
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
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
