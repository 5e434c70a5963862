package orders

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Charge is one Card or Ach payment to collect.
type Charge struct {
	TenantID string
	// IdempotencyKey is the order id and payment position: a retried
	// order charges the same key, which a processor treats as one charge.
	IdempotencyKey string
	Method         string
	Token          string
	AmountMinor    int64
	Currency       string
}

// ChargeResult is a processor's answer.
type ChargeResult struct {
	// Reference is the processor's id of the charge.
	Reference string
	// Declined is true when the processor refused the payment.
	Declined bool
	// Message says why, for the donor.
	Message string
}

// Processor collects Card and Ach payments. Implementations must be
// idempotent by Charge.IdempotencyKey.
type Processor interface {
	Charge(ctx context.Context, c Charge) (ChargeResult, error)
	// Void cancels a charge that will not be kept (the order was not
	// recorded, or it is voided).
	Void(ctx context.Context, reference string) error
	// Refund gives back amountMinor of a charge.
	Refund(ctx context.Context, reference string, amountMinor int64) error
}

// The sandbox test processor's documented tokens. Any token starting with
// "tok_decline" or "ach_decline" is declined; every other non-empty token
// succeeds (tok_visa, tok_mastercard, ach_success, ...).
const (
	TestTokenCardOK      = "tok_visa"
	TestTokenCardDecline = "tok_decline"
	TestTokenAchOK       = "ach_success"
	TestTokenAchDecline  = "ach_decline"
)

// TestProcessor is the sandbox's processor: no money moves, and the
// documented test tokens succeed or decline deterministically.
type TestProcessor struct{}

// Charge succeeds or declines by token; the reference is derived from the
// idempotency key so a retried charge is the same charge.
func (TestProcessor) Charge(_ context.Context, c Charge) (ChargeResult, error) {
	if strings.HasPrefix(c.Token, "tok_decline") || strings.HasPrefix(c.Token, "ach_decline") {
		return ChargeResult{Declined: true, Message: "The payment was declined by the processor."}, nil
	}
	sum := sha256.Sum256([]byte(c.TenantID + "/" + c.IdempotencyKey))
	return ChargeResult{Reference: "test_ch_" + hex.EncodeToString(sum[:12])}, nil
}

// Void always succeeds.
func (TestProcessor) Void(context.Context, string) error { return nil }

// Refund always succeeds.
func (TestProcessor) Refund(context.Context, string, int64) error { return nil }
