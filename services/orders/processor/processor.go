// Package processor is the orders service's contract with a payment
// processor: one tenant's account at Stripe, or the sandbox's built-in
// test processor. The orders service decides what to charge and records
// what happened; an implementation only speaks to the processor.
//
// Every call that moves money or creates an object takes an idempotency
// key, so a retried request (a crashed runner, a replayed order) is the
// same request at the processor and never charges twice.
package processor

import (
	"context"
	"errors"
	"fmt"
)

// Outcome is what a charge came to.
type Outcome int

const (
	// Succeeded means the money is collected (Stripe: succeeded).
	Succeeded Outcome = iota + 1
	// Processing means accepted, settles later (bank debits); a notification
	// says how it ends.
	Processing
	// RequiresAction means the donor must authenticate (3-D Secure) with the
	// client secret before the charge can go on.
	RequiresAction
	// Declined means the processor refused the payment method.
	Declined
	// Canceled means the charge was cancelled before it collected anything.
	// Only FindCharges reports it: a charge is never cancelled as it is
	// made.
	Canceled
)

// String names the outcome for logs and metrics.
func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Processing:
		return "processing"
	case RequiresAction:
		return "requires_action"
	case Declined:
		return "declined"
	case Canceled:
		return "canceled"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// ChargeRequest is one payment to collect, created and confirmed at once.
type ChargeRequest struct {
	// IdempotencyKey makes a retry the same charge.
	IdempotencyKey string
	// AmountMinor is the amount in the currency's minor units.
	AmountMinor int64
	// Currency is the ISO 4217 code (either case; Stripe wants lowercase).
	Currency string
	// PaymentMethodID is the tokenized card or bank account (pm_…).
	PaymentMethodID string
	// PaymentMethodType is "card" (also when empty) or "us_bank_account".
	// The processor confirms the two differently: a bank debit made with
	// the donor present records the donor's acceptance of its mandate.
	PaymentMethodType string
	// DonorIPAddress and DonorUserAgent are the donor's browser, for a
	// bank debit made with the donor present: they are the record of the
	// donor accepting the debit mandate online, and such a debit is
	// refused without them. Unused for cards and off-session charges.
	DonorIPAddress string
	DonorUserAgent string
	// CustomerID is the processor's customer (cus_…) the method is
	// attached to; empty for a one-off payment.
	CustomerID string
	// SaveForFutureUse tells the processor the method will be charged again
	// without the donor present (recurring schedules, saved methods).
	SaveForFutureUse bool
	// OffSession marks a charge made without the donor present (the
	// recurring runner's installments).
	OffSession bool
	// Description is shown in the processor's dashboard.
	Description string
	// Metadata travels with the charge (tenant_id, order_id, order_number,
	// payment_id), so the processor's dashboard leads back to the order.
	Metadata map[string]string
}

// ChargeResult is the processor's answer to a charge.
type ChargeResult struct {
	// Reference is the processor's id of the charge (pi_…), set whatever
	// the outcome.
	Reference string
	// Outcome is what the charge came to.
	Outcome Outcome
	// DeclineCode is the processor's reason code when declined
	// (card_declined, insufficient_funds, authentication_required, …).
	DeclineCode string
	// Message is the processor's reason, safe to show the donor.
	Message string
	// ClientSecret lets the donor's browser finish a RequiresAction charge
	// (Stripe.js handleNextAction); empty otherwise.
	ClientSecret string
}

// RefundRequest gives back part or all of a collected charge.
type RefundRequest struct {
	// IdempotencyKey makes a retry the same refund (the refund's own id).
	IdempotencyKey string
	// Reference is the charge to refund (pi_…).
	Reference string
	// AmountMinor is the amount to give back.
	AmountMinor int64
	// Metadata travels with the refund (tenant_id, order_id, refund_id).
	Metadata map[string]string
}

// Refund is an accepted refund.
type Refund struct {
	// ID is the processor's id of the refund (re_…).
	ID string
	// Pending is true when the refund is accepted but not yet final (bank
	// debits): it is recorded all the same.
	Pending bool
}

// FoundCharge is a charge as the processor holds it now, found by
// FindCharges.
type FoundCharge struct {
	// Reference is the processor's id of the charge (pi_…).
	Reference string
	// Outcome is where the charge stands: Succeeded (money collected),
	// Processing or RequiresAction (not settled: it can still be
	// cancelled), Declined or Canceled (nothing collected).
	Outcome Outcome
	// AmountMinor is the amount charged, in the currency's minor units.
	AmountMinor int64
	// RefundedMinor is how much of a succeeded charge is refunded so far.
	RefundedMinor int64
	// Currency is the ISO 4217 code, as the processor spells it.
	Currency string
}

// CustomerRequest creates the processor's customer for one contact.
type CustomerRequest struct {
	// IdempotencyKey makes a retry the same customer (tenant and contact).
	IdempotencyKey string
	Name           string
	Email          string
	// Metadata travels with the customer (tenant_id, contact_id).
	Metadata map[string]string
}

// PaymentMethod is a card or bank account kept at the processor.
type PaymentMethod struct {
	// ID is the processor's id (pm_…).
	ID string
	// Type is "card" or "us_bank_account".
	Type string
	// Brand is the card brand (visa, mastercard, …) or the bank's name.
	Brand string
	// Last4 are the last four digits of the card or account number.
	Last4 string
	// ExpMonth and ExpYear are a card's expiry; zero for bank accounts.
	ExpMonth int32
	ExpYear  int32
	// CustomerID is the customer it is attached to; empty when none.
	CustomerID string
}

// Processor is one tenant's account at a payment processor.
type Processor interface {
	// Charge creates and confirms one payment. A decline is an Outcome,
	// not an error; an error means the processor could not be asked (see
	// Unavailable) or refused the request itself (see Refused).
	Charge(ctx context.Context, r ChargeRequest) (ChargeResult, error)
	// Cancel cancels a charge that has not succeeded (Processing or
	// RequiresAction), or a charge that must not be kept.
	Cancel(ctx context.Context, reference, idempotencyKey string) error
	// Refund gives back part or all of a succeeded charge.
	Refund(ctx context.Context, r RefundRequest) (Refund, error)
	// CreateCustomer creates the processor's customer for a contact and
	// returns its id (cus_…).
	CreateCustomer(ctx context.Context, r CustomerRequest) (string, error)
	// AttachPaymentMethod attaches a method to a customer and returns it.
	AttachPaymentMethod(ctx context.Context, paymentMethodID, customerID, idempotencyKey string) (PaymentMethod, error)
	// DetachPaymentMethod detaches a method from its customer.
	DetachPaymentMethod(ctx context.Context, paymentMethodID string) error
	// FindCharges returns the charges whose metadata names both the
	// tenant and the order (the metadata every charge of an order
	// carries), so that the charges of an order that was never recorded
	// can be given back. The processor's index may lag its charges by a
	// little: a charge made a moment ago may not be found yet.
	FindCharges(ctx context.Context, tenantID, orderID string) ([]FoundCharge, error)
}

// UnavailableError means the processor could not be asked or did not
// answer usefully: a network failure, a timeout, a 5xx, a rate limit. The
// request may be retried with the same idempotency key.
type UnavailableError struct {
	Err error
}

func (e *UnavailableError) Error() string { return "payment processor unavailable: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// RefusedError means the processor answered and refused the request
// itself (not a decline of a charge): an unknown payment method, a refund
// of more than is left, a payment method that cannot be attached. Message
// is the processor's reason, safe to show; Param names the request
// parameter at fault when the processor said which.
type RefusedError struct {
	Code    string
	Message string
	Param   string
}

func (e *RefusedError) Error() string {
	return "payment processor refused the request: " + e.Code + ": " + e.Message
}

// IsUnavailable reports whether err is (or wraps) an UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// AsRefused returns the RefusedError in err's chain, if any.
func AsRefused(err error) (*RefusedError, bool) {
	var r *RefusedError
	ok := errors.As(err, &r)
	return r, ok
}

// EventKind is what a processor notification reports, as far as orders
// is concerned.
type EventKind int

const (
	// EventIgnored means a notification type orders does not act on.
	EventIgnored EventKind = iota
	// EventPaymentSucceeded means a Processing or RequiresAction charge
	// succeeded (payment_intent.succeeded).
	EventPaymentSucceeded
	// EventPaymentFailed means a charge failed (payment_intent.payment_failed).
	EventPaymentFailed
	// EventPaymentCanceled means a charge was cancelled (payment_intent.canceled).
	EventPaymentCanceled
	// EventChargeRefunded means some or all of a charge was refunded, possibly
	// in the processor's dashboard (charge.refunded).
	EventChargeRefunded
	// EventDisputeCreated means the donor's bank disputes a charge
	// (charge.dispute.created).
	EventDisputeCreated
)

// Event is a verified processor notification, reduced to what orders
// needs.
type Event struct {
	// ID is the processor's event id (evt_…): each is applied once.
	ID string
	// Type is the processor's event type (payment_intent.succeeded, …).
	Type string
	// Kind is what the event means to orders.
	Kind EventKind
	// Livemode is true for a live-mode event.
	Livemode bool
	// Reference is the charge the event is about (pi_…).
	Reference string
	// AmountRefundedMinor is, for EventChargeRefunded, the total refunded
	// of the charge so far (cumulative, not this refund alone).
	AmountRefundedMinor int64
	// FailureCode and FailureMessage say why a charge failed.
	FailureCode    string
	FailureMessage string
	// DisputeID is the processor's dispute id (dp_…) for EventDisputeCreated.
	DisputeID string
}

// ErrBadSignature means a notification's signature did not verify (or its
// timestamp was outside the tolerance, or its body was not an event).
var ErrBadSignature = errors.New("processor notification: signature does not verify")
