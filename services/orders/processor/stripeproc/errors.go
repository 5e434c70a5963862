package stripeproc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"

	stripe "github.com/stripe/stripe-go/v85"

	"github.com/almoner/almoner/services/orders/processor"
)

// mapError turns a failed request into the processor's errors:
//
//   - no answer (network, timeout, cancelled context), an answer that is
//     not Stripe's JSON, HTTP 5xx, api_error, 429 (rate limits and lock
//     timeouts) and 409 (a concurrent request with the same idempotency
//     key is still running): *processor.UnavailableError, to retry with
//     the same idempotency key;
//   - invalid_request_error and card_error outside a charge (HTTP 400,
//     402, 404): *processor.RefusedError with Stripe's code, message and
//     param;
//   - idempotency_error (the key was used with other parameters): a
//     *processor.RefusedError with code idempotency_error, since the same
//     request will be refused again;
//   - 401 and 403 (the tenant's key is wrong, revoked or lacks a
//     permission): a *processor.RefusedError with our own message, since
//     Stripe's names part of the key.
//
// No error carries Stripe's response body: UnavailableError's cause names
// the status, type, code and request id (enough to find it in Stripe's
// request log), and RefusedError.Message is Stripe's message to show.
func mapError(err error) error {
	var se *stripe.Error
	if !errors.As(err, &se) {
		return &processor.UnavailableError{Err: transportError(err)}
	}
	status := se.HTTPStatusCode
	switch {
	case status >= 500 || status == http.StatusTooManyRequests || status == http.StatusConflict ||
		se.Type == stripe.ErrorTypeAPI || se.Code == stripe.ErrorCodeLockTimeout || se.Code == stripe.ErrorCodeRateLimit:
		return &processor.UnavailableError{Err: &apiError{status: status, typ: string(se.Type), code: string(se.Code), requestID: se.RequestID}}
	case status == http.StatusUnauthorized:
		return &processor.RefusedError{Code: "authentication_failed", Message: "The Stripe account's secret key was not accepted."}
	case status == http.StatusForbidden:
		return &processor.RefusedError{Code: "permission_denied", Message: "The Stripe account's key may not make this request."}
	case se.Type == stripe.ErrorTypeIdempotency:
		return &processor.RefusedError{Code: string(stripe.ErrorTypeIdempotency), Message: "The idempotency key was already used for a different request."}
	}
	code := string(se.Code)
	if code == "" {
		code = string(se.Type)
	}
	msg := se.Msg
	if msg == "" {
		msg = "The payment processor refused the request."
	}
	return &processor.RefusedError{Code: code, Message: msg, Param: se.Param}
}

// apiError is an answer from Stripe that says it could not serve the
// request, told without Stripe's free text.
type apiError struct {
	status    int
	typ       string
	code      string
	requestID string
}

func (e *apiError) Error() string {
	s := "stripe answered HTTP " + strconv.Itoa(e.status)
	if e.typ != "" {
		s += " " + e.typ
	}
	if e.code != "" {
		s += " (" + e.code + ")"
	}
	if e.requestID != "" {
		s += ", request " + e.requestID
	}
	return s
}

// errUnreadableAnswer replaces the SDK's error for an answer that was not
// Stripe's JSON (a proxy's error page, a cut body): the SDK's error quotes
// the body.
var errUnreadableAnswer = errors.New("stripe's answer could not be read")

// transportError keeps an error that says why Stripe could not be asked
// (it names the URL, never a body) and replaces any other.
func transportError(err error) error {
	var ue *url.Error
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ue), errors.As(err, &ne):
		return err
	}
	return errUnreadableAnswer
}
