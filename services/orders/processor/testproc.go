package processor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The sandbox test processor's documented tokens. A token starting with
// one of declinePrefixes is declined (tok_decline, ach_decline, and
// Stripe's own declining test methods, so that pm_card_chargeDeclined
// declines here as in Stripe's test mode); every other non-empty token
// succeeds (tok_visa, pm_card_visa, ach_success, ...).
const (
	TestTokenCardOK      = "tok_visa"
	TestTokenCardDecline = "tok_decline"
	TestTokenAchOK       = "ach_success"
	TestTokenAchDecline  = "ach_decline"
)

// Test is the sandbox's built-in processor for tenants that have not
// connected Stripe: no money moves, and the documented test tokens succeed
// or decline deterministically. Every reference is derived from the
// idempotency key, so a retried charge is the same charge.
type Test struct{}

var _ Processor = Test{}

func testID(prefix, key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefix + hex.EncodeToString(sum[:12])
}

// declinePrefixes start the tokens the test processor declines: its own,
// and the PaymentMethods and tokens Stripe's test mode declines
// (stripefake/testmethods.go lists them as Stripe answers them), so a
// donation form tried against the sandbox sees the decline it will see in
// Stripe's test mode. A saved method made from one starts with it too.
var declinePrefixes = []string{TestTokenCardDecline, TestTokenAchDecline, "pm_card_chargeDeclined", "pm_card_visa_chargeDeclined", "tok_chargeDeclined"}

// insufficientFunds marks the declining tokens whose decline code is
// insufficient_funds, as Stripe's pm_card_chargeDeclinedInsufficientFunds.
const insufficientFunds = "InsufficientFunds"

// Charge succeeds or declines by token.
func (Test) Charge(_ context.Context, r ChargeRequest) (ChargeResult, error) {
	ref := testID("test_ch_", r.IdempotencyKey)
	for _, p := range declinePrefixes {
		if !strings.HasPrefix(r.PaymentMethodID, p) {
			continue
		}
		if strings.HasPrefix(strings.TrimPrefix(r.PaymentMethodID, p), insufficientFunds) {
			return ChargeResult{Reference: ref, Outcome: Declined, DeclineCode: "insufficient_funds", Message: "Your card has insufficient funds."}, nil
		}
		return ChargeResult{Reference: ref, Outcome: Declined, DeclineCode: "card_declined", Message: "Your card was declined."}, nil
	}
	return ChargeResult{Reference: ref, Outcome: Succeeded}, nil
}

// Cancel always succeeds.
func (Test) Cancel(context.Context, string, string) error { return nil }

// Refund always succeeds.
func (Test) Refund(_ context.Context, r RefundRequest) (Refund, error) {
	return Refund{ID: testID("test_re_", r.IdempotencyKey)}, nil
}

// CreateCustomer returns a customer id derived from the key.
func (Test) CreateCustomer(_ context.Context, r CustomerRequest) (string, error) {
	return testID("test_cus_", r.IdempotencyKey), nil
}

// AttachPaymentMethod describes a test token as a card or bank account
// attached to customer. As Stripe does with its test tokens, attaching a
// token makes a payment method of its own, with an id derived from the
// idempotency key and starting with the token (so a declining token's
// method still declines): one donor's saved method is never another
// donor's token. A method made so is attached as it is.
func (Test) AttachPaymentMethod(_ context.Context, pm, customer, idempotencyKey string) (PaymentMethod, error) {
	id := pm
	if !strings.Contains(pm, testMethodMark) {
		id = testID(pm+testMethodMark, idempotencyKey)
	}
	if strings.HasPrefix(pm, "ach_") {
		return PaymentMethod{ID: id, Type: "us_bank_account", Brand: "STRIPE TEST BANK", Last4: "6789", CustomerID: customer}, nil
	}
	return PaymentMethod{ID: id, Type: "card", Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2034, CustomerID: customer}, nil
}

// testMethodMark marks the id of a payment method the test processor made
// from a token (tok_visa_pm_3f…).
const testMethodMark = "_pm_"

// DetachPaymentMethod always succeeds.
func (Test) DetachPaymentMethod(context.Context, string) error { return nil }

// FindCharges finds nothing: the test processor moves no money, so an
// order that was never recorded has nothing to give back.
func (Test) FindCharges(context.Context, string, string) ([]FoundCharge, error) { return nil, nil }
