package stripeproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	if webhookSecret == "" {
		// An empty key would verify signatures anyone can compute.
		return processor.Event{}, fmt.Errorf("%w: no signing secret", processor.ErrBadSignature)
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signatureHeader, webhookSecret, webhook.ConstructEventOptions{
		Tolerance:                EventTolerance,
		IgnoreAPIVersionMismatch: true,
	})
	if err != nil {
		return processor.Event{}, fmt.Errorf("%w: %w", processor.ErrBadSignature, err)
	}
	if ev.ID == "" || ev.Type == "" {
		return processor.Event{}, fmt.Errorf("%w: no event id or type", processor.ErrBadSignature)
	}
	out := processor.Event{ID: ev.ID, Type: string(ev.Type), Livemode: ev.Livemode}
	switch out.Type {
	case "payment_intent.succeeded":
		out.Kind = processor.EventPaymentSucceeded
	case "payment_intent.payment_failed":
		out.Kind = processor.EventPaymentFailed
	case "payment_intent.canceled":
		out.Kind = processor.EventPaymentCanceled
	case "charge.refunded":
		out.Kind = processor.EventChargeRefunded
	case "charge.dispute.created":
		out.Kind = processor.EventDisputeCreated
	default:
		out.Kind = processor.EventIgnored
		return out, nil
	}
	var raw json.RawMessage
	if ev.Data != nil {
		raw = ev.Data.Raw
	}
	var obj eventObject
	if len(raw) == 0 {
		return processor.Event{}, fmt.Errorf("%w: %s %s has no object", ErrIncompleteEvent, out.Type, out.ID)
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return processor.Event{}, fmt.Errorf("%w: %s %s: %w", ErrIncompleteEvent, out.Type, out.ID, err)
	}
	switch out.Kind {
	case processor.EventPaymentSucceeded, processor.EventPaymentFailed, processor.EventPaymentCanceled:
		out.Reference = obj.ID
		if e := obj.LastPaymentError; out.Kind == processor.EventPaymentFailed && e != nil {
			// The same choice as a declined charge: the issuer's reason
			// when there is one (insufficient_funds), else Stripe's code.
			out.FailureCode = e.DeclineCode
			if out.FailureCode == "" {
				out.FailureCode = e.Code
			}
			out.FailureMessage = e.Message
		}
	case processor.EventChargeRefunded:
		out.Reference = obj.PaymentIntent.id
		out.AmountRefundedMinor = obj.AmountRefunded
	case processor.EventDisputeCreated:
		out.Reference = obj.PaymentIntent.id
		out.DisputeID = obj.ID
		if out.DisputeID == "" {
			return processor.Event{}, fmt.Errorf("%w: %s %s has no dispute id", ErrIncompleteEvent, out.Type, out.ID)
		}
	}
	if out.Reference == "" {
		return processor.Event{}, fmt.Errorf("%w: %s %s names no PaymentIntent", ErrIncompleteEvent, out.Type, out.ID)
	}
	return out, nil
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
