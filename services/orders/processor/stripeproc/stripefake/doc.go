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
