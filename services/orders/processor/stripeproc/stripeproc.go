// Package stripeproc is the orders service's processor.Processor for one
// tenant's Stripe account, on Stripe's official Go SDK (stripe-go v85),
// and the verification of Stripe's webhook notifications (ParseEvent).
//
// Charges are PaymentIntents created and confirmed in one request; there
// is no use of the Charges or SetupIntents APIs. The SDK's own retries are
// off: callers retry with the same idempotency key, which makes Stripe
// answer a retry with the stored result of the first request.
package stripeproc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v85"

	"github.com/almoner/almoner/services/orders/processor"
)

// DefaultAPIBase is Stripe's API.
const DefaultAPIBase = "https://api.stripe.com"

// DefaultTimeout bounds one request to Stripe when Config.HTTPClient is
// not given. A confirmation can take several seconds at the card network;
// twenty leaves room for that and still frees a stuck caller, who retries
// with the same idempotency key.
const DefaultTimeout = 20 * time.Second

// MaxIdleConnsPerHost is how many idle connections to Stripe NewHTTPClient
// keeps. net/http's default transport keeps two: over HTTP/1.1 (a proxy,
// stripe-mock, the test suite's fake) every charge beyond the second at
// once opened a connection and closed it after one request, a new TCP
// (and TLS) handshake per charge under load (docs/performance.md,
// "Session 13"). Over HTTP/2 charges share one connection either way.
const MaxIdleConnsPerHost = 64

// NewHTTPClient is the client for Stripe requests: DefaultTimeout per
// request, and a transport like net/http's default that keeps up to
// MaxIdleConnsPerHost connections to the API for the next charges. Share
// one between the tenants' processors of a process.
func NewHTTPClient() *http.Client {
	var tr *http.Transport
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = d.Clone()
	} else { // replaced by a test or a library: its settings, written out
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, MaxIdleConns: 100,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	}
	tr.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	tr.MaxIdleConns = max(tr.MaxIdleConns, MaxIdleConnsPerHost)
	return &http.Client{Timeout: DefaultTimeout, Transport: tr}
}

// Payment method types Stripe confirms, as in processor.ChargeRequest.
const (
	TypeCard          = "card"
	TypeUSBankAccount = "us_bank_account"
)

// Config is one tenant's Stripe account.
type Config struct {
	// APIBase is where every request goes: DefaultAPIBase when empty; a
	// stripe-mock or stripefake address in tests. The orders service reads
	// it from ALMONER_STRIPE_API_BASE.
	APIBase string
	// SecretKey is the account's secret (sk_…) or restricted (rk_…) key.
	SecretKey string
	// HTTPClient makes the requests; when nil, a new NewHTTPClient (pass
	// one shared client instead when making a processor per request). Its
	// Timeout is the bound of one request.
	HTTPClient *http.Client
}

// New returns the Processor for one Stripe account.
func New(cfg Config) processor.Processor {
	return newAdapter(cfg)
}

// adapter is New's Processor; tests reach its client for requests the
// Processor does not make.
type adapter struct {
	client *stripe.Client
}

func newAdapter(cfg Config) *adapter {
	base := cfg.APIBase
	if base == "" {
		base = DefaultAPIBase
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = NewHTTPClient()
	}
	backendCfg := &stripe.BackendConfig{
		HTTPClient: hc,
		URL:        stripe.String(base),
		// Our callers retry with the same idempotency key when they
		// choose to; retries inside the SDK would only hide the time spent.
		MaxNetworkRetries: stripe.Int64(0),
		// The SDK logs failed requests with Stripe's whole error to stderr;
		// the caller logs what it returns instead.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	// Every backend gets the same base: only the API backend is used, and
	// a request that reached another one by mistake must not leave for
	// Stripe's real hosts from a test.
	backends := stripe.NewBackendsWithConfig(backendCfg)
	return &adapter{client: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends))}
}

// errNoIdempotencyKey is returned, without asking Stripe, for a request
// that moves money or creates an object without an idempotency key: a
// retry of it could charge, refund or create twice.
var errNoIdempotencyKey = errors.New("stripeproc: the request has no idempotency key")

// Charge creates and confirms a PaymentIntent.
func (a *adapter) Charge(ctx context.Context, r processor.ChargeRequest) (processor.ChargeResult, error) {
	params, err := chargeParams(r)
	if err != nil {
		return processor.ChargeResult{}, err
	}
	pi, err := a.client.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.Type == stripe.ErrorTypeCard {
			return declined(se), nil
		}
		return processor.ChargeResult{}, mapError(err)
	}
	return chargeResult(pi)
}

// chargeParams is the PaymentIntent a charge creates and confirms, or the
// refusal of a request Stripe could not take (no key, a method type we do
// not take, a bank debit made on session without the donor's mandate).
func chargeParams(r processor.ChargeRequest) (*stripe.PaymentIntentCreateParams, error) {
	if r.IdempotencyKey == "" {
		return nil, errNoIdempotencyKey
	}
	pmType := r.PaymentMethodType
	if pmType == "" {
		pmType = TypeCard
	}
	if pmType != TypeCard && pmType != TypeUSBankAccount {
		return nil, &processor.RefusedError{
			Code: "payment_method_type_unsupported", Param: "payment_method_types",
			Message: "This payment method type is not supported.",
		}
	}
	params := &stripe.PaymentIntentCreateParams{
		Amount:   stripe.Int64(r.AmountMinor),
		Currency: stripe.String(strings.ToLower(r.Currency)),
		Confirm:  stripe.Bool(true),
		// Naming the one type disables automatic payment methods (the
		// default since API version 2023-08-16), which would otherwise
		// demand a return_url for redirect-based methods and would depend
		// on what the tenant enabled in the Dashboard.
		PaymentMethodTypes: []*string{stripe.String(pmType)},
		PaymentMethod:      stripe.String(r.PaymentMethodID),
	}
	params.IdempotencyKey = stripe.String(r.IdempotencyKey)
	if r.CustomerID != "" {
		params.Customer = stripe.String(r.CustomerID)
	}
	if r.Description != "" {
		params.Description = stripe.String(r.Description)
	}
	if len(r.Metadata) > 0 {
		params.Metadata = copyMetadata(r.Metadata)
	}
	switch {
	case r.OffSession:
		params.OffSession = stripe.Bool(true)
	case r.SaveForFutureUse:
		params.SetupFutureUsage = stripe.String("off_session")
	}
	if pmType == TypeUSBankAccount && !r.OffSession {
		mandate, err := onlineMandate(r)
		if err != nil {
			return nil, err
		}
		params.MandateData = mandate
	}
	return params, nil
}

// onlineMandate is the donor's acceptance of a bank debit's mandate, made
// now, online. A bank debit needs a mandate: off session, the one the
// donor accepted when the method was saved (on its first, on-session
// payment or at the donation form) applies, and Stripe finds it itself.
func onlineMandate(r processor.ChargeRequest) (*stripe.PaymentIntentCreateMandateDataParams, error) {
	if r.DonorIPAddress == "" || r.DonorUserAgent == "" {
		return nil, &processor.RefusedError{
			Code: "mandate_acceptance_missing", Param: "mandate_data",
			Message: "The bank debit cannot be made: the donor's acceptance of the debit mandate was not recorded.",
		}
	}
	return &stripe.PaymentIntentCreateMandateDataParams{
		CustomerAcceptance: &stripe.PaymentIntentCreateMandateDataCustomerAcceptanceParams{
			Type: stripe.String("online"),
			Online: &stripe.PaymentIntentCreateMandateDataCustomerAcceptanceOnlineParams{
				IPAddress: stripe.String(r.DonorIPAddress),
				UserAgent: stripe.String(r.DonorUserAgent),
			},
		},
	}, nil
}

// declined is the result of a confirmation Stripe answered with a card
// error (HTTP 402): the PaymentIntent exists, with a failed attempt.
func declined(se *stripe.Error) processor.ChargeResult {
	res := processor.ChargeResult{
		Outcome:     processor.Declined,
		DeclineCode: string(se.DeclineCode),
		Message:     se.Msg,
	}
	if res.DeclineCode == "" {
		res.DeclineCode = string(se.Code)
	}
	if res.Message == "" {
		res.Message = genericDecline
	}
	if se.PaymentIntent != nil {
		res.Reference = se.PaymentIntent.ID
	}
	return res
}

// genericDecline is shown when Stripe declined without a message.
const genericDecline = "The payment was declined."

// chargeResult maps a confirmed PaymentIntent to the charge's outcome.
func chargeResult(pi *stripe.PaymentIntent) (processor.ChargeResult, error) {
	res := processor.ChargeResult{Reference: pi.ID}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		res.Outcome = processor.Succeeded
	case stripe.PaymentIntentStatusProcessing:
		res.Outcome = processor.Processing
	case stripe.PaymentIntentStatusRequiresAction:
		res.Outcome = processor.RequiresAction
		res.ClientSecret = pi.ClientSecret
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		// Confirmation was attempted (confirm=true) and the PaymentIntent
		// went back to needing a method: the attempt failed. Stripe
		// usually answers this with a card error instead; both are a
		// decline.
		res.Outcome = processor.Declined
		res.Message = genericDecline
		if e := pi.LastPaymentError; e != nil {
			res.DeclineCode = string(e.DeclineCode)
			if res.DeclineCode == "" {
				res.DeclineCode = string(e.Code)
			}
			if e.Msg != "" {
				res.Message = e.Msg
			}
		}
	default:
		// requires_confirmation, requires_capture and canceled cannot
		// follow a create with confirm=true and automatic capture: an
		// answer the orders service must not guess about.
		return processor.ChargeResult{}, &unexpectedStatusError{id: pi.ID, status: string(pi.Status)}
	}
	return res, nil
}

// unexpectedStatusError is a PaymentIntent that came back in a status a
// confirmed charge cannot have.
type unexpectedStatusError struct {
	id, status string
}

func (e *unexpectedStatusError) Error() string {
	return "stripeproc: PaymentIntent " + e.id + " came back " + e.status + " after confirmation"
}

// Cancel cancels a PaymentIntent. One already canceled is success, so a
// retried cancel whose first answer was lost succeeds too.
func (a *adapter) Cancel(ctx context.Context, reference, idempotencyKey string) error {
	params := &stripe.PaymentIntentCancelParams{}
	if idempotencyKey != "" {
		params.IdempotencyKey = stripe.String(idempotencyKey)
	}
	_, err := a.client.V1PaymentIntents.Cancel(ctx, reference, params)
	if err == nil {
		return nil
	}
	var se *stripe.Error
	if errors.As(err, &se) && se.Type == stripe.ErrorTypeInvalidRequest && se.HTTPStatusCode == http.StatusBadRequest {
		// Stripe refuses to cancel a canceled PaymentIntent and includes
		// the PaymentIntent in its error; ask for it when it did not.
		pi := se.PaymentIntent
		if pi == nil || pi.Status == "" {
			got, rerr := a.client.V1PaymentIntents.Retrieve(ctx, reference, nil)
			if rerr == nil {
				pi = got
			}
		}
		if pi != nil && pi.Status == stripe.PaymentIntentStatusCanceled {
			return nil
		}
	}
	return mapError(err)
}

// Refund refunds part or all of a PaymentIntent's charge.
func (a *adapter) Refund(ctx context.Context, r processor.RefundRequest) (processor.Refund, error) {
	if r.IdempotencyKey == "" {
		return processor.Refund{}, errNoIdempotencyKey
	}
	params := &stripe.RefundCreateParams{
		PaymentIntent: stripe.String(r.Reference),
		Amount:        stripe.Int64(r.AmountMinor),
	}
	params.IdempotencyKey = stripe.String(r.IdempotencyKey)
	if len(r.Metadata) > 0 {
		params.Metadata = copyMetadata(r.Metadata)
	}
	re, err := a.client.V1Refunds.Create(ctx, params)
	if err != nil {
		return processor.Refund{}, mapError(err)
	}
	switch re.Status {
	case stripe.RefundStatusFailed, stripe.RefundStatusCanceled:
		// Refunds of cards and bank debits are accepted as pending or
		// succeeded; one that failed at once gave nothing back.
		msg := "The refund was not accepted."
		if re.FailureReason != "" {
			msg += " (" + string(re.FailureReason) + ")"
		}
		return processor.Refund{}, &processor.RefusedError{Code: "refund_" + string(re.Status), Message: msg}
	}
	return processor.Refund{
		ID:      re.ID,
		Pending: re.Status == stripe.RefundStatusPending || re.Status == stripe.RefundStatusRequiresAction,
	}, nil
}

// CreateCustomer creates a Stripe customer.
func (a *adapter) CreateCustomer(ctx context.Context, r processor.CustomerRequest) (string, error) {
	if r.IdempotencyKey == "" {
		return "", errNoIdempotencyKey
	}
	params := &stripe.CustomerCreateParams{}
	params.IdempotencyKey = stripe.String(r.IdempotencyKey)
	if r.Name != "" {
		params.Name = stripe.String(r.Name)
	}
	if r.Email != "" {
		params.Email = stripe.String(r.Email)
	}
	if len(r.Metadata) > 0 {
		params.Metadata = copyMetadata(r.Metadata)
	}
	c, err := a.client.V1Customers.Create(ctx, params)
	if err != nil {
		return "", mapError(err)
	}
	return c.ID, nil
}

// AttachPaymentMethod attaches a PaymentMethod to a customer.
func (a *adapter) AttachPaymentMethod(ctx context.Context, paymentMethodID, customerID, idempotencyKey string) (processor.PaymentMethod, error) {
	params := &stripe.PaymentMethodAttachParams{Customer: stripe.String(customerID)}
	if idempotencyKey != "" {
		params.IdempotencyKey = stripe.String(idempotencyKey)
	}
	pm, err := a.client.V1PaymentMethods.Attach(ctx, paymentMethodID, params)
	if err != nil {
		return processor.PaymentMethod{}, mapError(err)
	}
	return paymentMethod(pm), nil
}

func paymentMethod(pm *stripe.PaymentMethod) processor.PaymentMethod {
	out := processor.PaymentMethod{ID: pm.ID, Type: string(pm.Type)}
	if pm.Customer != nil {
		out.CustomerID = pm.Customer.ID
	}
	switch {
	case pm.Card != nil:
		out.Brand = string(pm.Card.Brand)
		out.Last4 = pm.Card.Last4
		out.ExpMonth = int32(pm.Card.ExpMonth)
		out.ExpYear = int32(pm.Card.ExpYear)
	case pm.USBankAccount != nil:
		out.Brand = pm.USBankAccount.BankName
		out.Last4 = pm.USBankAccount.Last4
	}
	return out
}

// DetachPaymentMethod detaches a PaymentMethod from its customer. One
// that is attached to no customer is success: Stripe refuses to detach
// it, so the refusal is checked against the method itself.
func (a *adapter) DetachPaymentMethod(ctx context.Context, paymentMethodID string) error {
	_, err := a.client.V1PaymentMethods.Detach(ctx, paymentMethodID, nil)
	if err == nil {
		return nil
	}
	var se *stripe.Error
	if errors.As(err, &se) && se.Type == stripe.ErrorTypeInvalidRequest && se.HTTPStatusCode == http.StatusBadRequest {
		pm, rerr := a.client.V1PaymentMethods.Retrieve(ctx, paymentMethodID, nil)
		if rerr == nil && pm.Customer == nil {
			return nil
		}
	}
	return mapError(err)
}

// searchPageSize is the most PaymentIntents one search request returns
// (Stripe's maximum): an order has a handful of charges, so one page.
const searchPageSize = 100

// FindCharges searches the account's PaymentIntents (Stripe's Search API)
// for those whose metadata names the tenant and the order, with each one's
// latest charge expanded for the amount refunded so far. Search is
// eventually consistent: Stripe indexes a PaymentIntent within about a
// minute, longer during an incident, so a caller looks well after the
// charge was made.
func (a *adapter) FindCharges(ctx context.Context, tenantID, orderID string) ([]processor.FoundCharge, error) {
	params := &stripe.PaymentIntentSearchParams{}
	params.Query = "metadata['tenant_id']:" + searchString(tenantID) + " AND metadata['order_id']:" + searchString(orderID)
	params.Limit = stripe.Int64(searchPageSize)
	params.AddExpand("data.latest_charge")
	var out []processor.FoundCharge
	for pi, err := range a.client.V1PaymentIntents.Search(ctx, params).All(ctx) {
		if err != nil {
			return nil, mapError(err)
		}
		out = append(out, foundCharge(pi))
	}
	return out, nil
}

// searchString quotes a value for Stripe's search query language: in
// single quotes, with a quote or backslash escaped by a backslash.
func searchString(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// foundCharge maps a PaymentIntent to where its charge stands.
func foundCharge(pi *stripe.PaymentIntent) processor.FoundCharge {
	c := processor.FoundCharge{Reference: pi.ID, AmountMinor: pi.Amount, Currency: string(pi.Currency)}
	if pi.LatestCharge != nil {
		c.RefundedMinor = pi.LatestCharge.AmountRefunded
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		c.Outcome = processor.Succeeded
	case stripe.PaymentIntentStatusProcessing:
		c.Outcome = processor.Processing
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		c.Outcome = processor.Declined
	case stripe.PaymentIntentStatusCanceled:
		c.Outcome = processor.Canceled
	default:
		// requires_action, and requires_confirmation or requires_capture
		// (which our confirmed, automatically captured charges never
		// have): nothing collected yet, and cancelling it ends it.
		c.Outcome = processor.RequiresAction
	}
	return c
}

// copyMetadata keeps the caller's map out of the SDK's params, which the
// SDK may extend.
func copyMetadata(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
