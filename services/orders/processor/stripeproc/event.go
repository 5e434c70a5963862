package stripeproc

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/almoner/almoner/services/orders/processor"
)

// EventTolerance is how old a notification's signature may be: Stripe's
// default, which bounds how long a captured notification can be replayed.
const EventTolerance = 5 * time.Minute

// ErrIncompleteEvent means a notification verified but its object lacks
// what its type needs (a charge.refunded without a payment_intent, a
// dispute of a charge made outside PaymentIntents). It came from Stripe,
// so it is not ErrBadSignature; it will never become usable, so a webhook
// handler should log it and acknowledge it rather than make Stripe
// deliver it again for days.
var ErrIncompleteEvent = errors.New("stripe notification lacks what its type needs")

// ParseEvent verifies a Stripe notification with the endpoint's signing
// secret (whsec_…) and reduces it to what orders needs.
//
// Any failure to verify (no or malformed Stripe-Signature header, wrong
// secret or body, a timestamp older than EventTolerance, a body that is
// not an event, an empty secret) is an error wrapping
// processor.ErrBadSignature. The event's API version is not checked: a
// tenant's account may be pinned to an older one, and only fields present
// in every version are read, from the raw object.
func ParseEvent(payload []byte, signatureHeader, webhookSecret string) (processor.Event, error) {
	ev, err := verifyEvent(payload, signatureHeader, webhookSecret)
	if err != nil {
		return processor.Event{}, err
	}
	out := processor.Event{ID: ev.ID, Type: string(ev.Type), Livemode: ev.Livemode, Kind: eventKind(string(ev.Type))}
	if out.Kind == processor.EventIgnored {
		return out, nil
	}
	obj, err := readEventObject(ev, out)
	if err != nil {
		return processor.Event{}, err
	}
	if err := applyEventObject(&out, obj); err != nil {
		return processor.Event{}, err
	}
	return out, nil
}

// verifyEvent checks the notification's signature and that it names an
// event; every failure wraps processor.ErrBadSignature.
func verifyEvent(payload []byte, signatureHeader, webhookSecret string) (stripe.Event, error) {
	if webhookSecret == "" {
		// An empty key would verify signatures anyone can compute.
		return stripe.Event{}, fmt.Errorf("%w: no signing secret", processor.ErrBadSignature)
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signatureHeader, webhookSecret, webhook.ConstructEventOptions{
		Tolerance:                EventTolerance,
		IgnoreAPIVersionMismatch: true,
	})
	if err != nil {
		return stripe.Event{}, fmt.Errorf("%w: %w", processor.ErrBadSignature, err)
	}
	if ev.ID == "" || ev.Type == "" {
		return stripe.Event{}, fmt.Errorf("%w: no event id or type", processor.ErrBadSignature)
	}
	return ev, nil
}

// eventKind returns what orders does with a notification of type typ.
func eventKind(typ string) processor.EventKind {
	switch typ {
	case "payment_intent.succeeded":
		return processor.EventPaymentSucceeded
	case "payment_intent.payment_failed":
		return processor.EventPaymentFailed
	case "payment_intent.canceled":
		return processor.EventPaymentCanceled
	case "charge.refunded":
		return processor.EventChargeRefunded
	case "charge.dispute.created":
		return processor.EventDisputeCreated
	}
	return processor.EventIgnored
}

// readEventObject decodes the object ev carries; out names the event in
// the error.
func readEventObject(ev stripe.Event, out processor.Event) (eventObject, error) {
	var raw json.RawMessage
	if ev.Data != nil {
		raw = ev.Data.Raw
	}
	var obj eventObject
	if len(raw) == 0 {
		return obj, fmt.Errorf("%w: %s %s has no object", ErrIncompleteEvent, out.Type, out.ID)
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return obj, fmt.Errorf("%w: %s %s: %w", ErrIncompleteEvent, out.Type, out.ID, err)
	}
	return obj, nil
}

// applyEventObject copies into out what its kind of event needs from obj,
// and refuses an event that names no PaymentIntent (or dispute) to act on.
func applyEventObject(out *processor.Event, obj eventObject) error {
	switch out.Kind {
	case processor.EventPaymentSucceeded, processor.EventPaymentFailed, processor.EventPaymentCanceled:
		out.Reference = obj.ID
		if e := obj.LastPaymentError; out.Kind == processor.EventPaymentFailed && e != nil {
			// The same choice as a declined charge: the issuer's reason
			// when there is one (insufficient_funds), else Stripe's code.
			out.FailureCode = cmp.Or(e.DeclineCode, e.Code)
			out.FailureMessage = e.Message
		}
	case processor.EventChargeRefunded:
		out.Reference = obj.PaymentIntent.id
		out.AmountRefundedMinor = obj.AmountRefunded
	case processor.EventDisputeCreated:
		out.Reference = obj.PaymentIntent.id
		out.DisputeID = obj.ID
		if out.DisputeID == "" {
			return fmt.Errorf("%w: %s %s has no dispute id", ErrIncompleteEvent, out.Type, out.ID)
		}
	}
	if out.Reference == "" {
		return fmt.Errorf("%w: %s %s names no PaymentIntent", ErrIncompleteEvent, out.Type, out.ID)
	}
	return nil
}

// eventObject is the part of an event's object ParseEvent reads: fields
// that have kept their name and shape across API versions.
type eventObject struct {
	ID               string     `json:"id"`
	PaymentIntent    idOrObject `json:"payment_intent"`
	AmountRefunded   int64      `json:"amount_refunded"`
	LastPaymentError *struct {
		Code        string `json:"code"`
		DeclineCode string `json:"decline_code"`
		Message     string `json:"message"`
	} `json:"last_payment_error"`
}

// idOrObject is a reference Stripe renders as an id, or as the object
// when expanded, or null.
type idOrObject struct {
	id string
}

func (r *idOrObject) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &r.id)
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	r.id = obj.ID
	return nil
}
