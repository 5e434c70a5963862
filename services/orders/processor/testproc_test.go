package processor

import (
	"context"
	"strings"
	"testing"
)

// TestTestAttachMakesAMethod: attaching a test token makes a method of
// its own for each attach (so two donors saving tok_visa do not share
// one), keeps the token's meaning (a declining token's method declines),
// and a method made so attaches as it is.
func TestTestAttachMakesAMethod(t *testing.T) {
	ctx := context.Background()
	var p Test
	a, _ := p.AttachPaymentMethod(ctx, TestTokenCardOK, "cus_a", "attach/a")
	b, _ := p.AttachPaymentMethod(ctx, TestTokenCardOK, "cus_b", "attach/b")
	if a.ID == b.ID || a.ID == TestTokenCardOK || !strings.HasPrefix(a.ID, TestTokenCardOK) {
		t.Errorf("tok_visa attached for two customers: %q and %q, want two methods of their own", a.ID, b.ID)
	}
	if again, _ := p.AttachPaymentMethod(ctx, a.ID, "cus_a", "attach/c"); again.ID != a.ID {
		t.Errorf("a made method attached again: %q, want %q", again.ID, a.ID)
	}
	bank, _ := p.AttachPaymentMethod(ctx, TestTokenAchOK, "cus_a", "attach/d")
	if bank.Type != "us_bank_account" {
		t.Errorf("ach_success attached as %q", bank.Type)
	}
	declining, _ := p.AttachPaymentMethod(ctx, TestTokenCardDecline, "cus_a", "attach/e")
	if r, _ := p.Charge(ctx, ChargeRequest{IdempotencyKey: "k", PaymentMethodID: declining.ID}); r.Outcome != Declined {
		t.Errorf("the method made from tok_decline: %v, want declined", r.Outcome)
	}
}

// TestTestChargeByToken: the sandbox's test processor answers the tokens
// as the README lists them, Stripe's declining test methods included
// (issue 35: pm_card_chargeDeclined was captured).
func TestTestChargeByToken(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  Outcome
		code  string
	}{
		{"tok_visa", Succeeded, ""},
		{"pm_card_visa", Succeeded, ""},
		{"ach_success", Succeeded, ""},
		{"tok_decline", Declined, "card_declined"},
		{"ach_decline", Declined, "card_declined"},
		{"pm_card_chargeDeclined", Declined, "card_declined"},
		{"pm_card_visa_chargeDeclined", Declined, "card_declined"},
		{"tok_chargeDeclined", Declined, "card_declined"},
		{"pm_card_chargeDeclinedInsufficientFunds", Declined, "insufficient_funds"},
		{"pm_card_chargeDeclined_pm_0a1b", Declined, "card_declined"},
	} {
		got, err := Test{}.Charge(t.Context(), ChargeRequest{PaymentMethodID: tc.token, IdempotencyKey: "k"})
		if err != nil {
			t.Fatalf("%s: %v", tc.token, err)
		}
		if got.Outcome != tc.want || got.DeclineCode != tc.code {
			t.Errorf("%s: %v %q, want %v %q", tc.token, got.Outcome, got.DeclineCode, tc.want, tc.code)
		}
	}
}
