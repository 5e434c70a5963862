package stripefake

import (
	"strings"
)

// behavior is what a test payment method does when charged.
type behavior int

const (
	succeeds behavior = iota
	declines
	needsAuthentication
	processes
)

// template is one of Stripe's test payment methods.
type template struct {
	typ               string
	brand, last4      string
	expMonth, expYear int
	bankName          string
	behavior          behavior
	code, declineCode string
	message           string
	attachDeclines    bool
}

var catalog = map[string]template{
	"pm_card_visa":       {typ: "card", brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
	"pm_card_mastercard": {typ: "card", brand: "mastercard", last4: "4444", expMonth: 12, expYear: 2034},
	"pm_card_chargeDeclined": {typ: "card", brand: "visa", last4: "0002", expMonth: 12, expYear: 2034,
		behavior: declines, code: "card_declined", declineCode: "generic_decline", message: "Your card was declined.", attachDeclines: true},
	"pm_card_chargeDeclinedInsufficientFunds": {typ: "card", brand: "visa", last4: "9995", expMonth: 12, expYear: 2034,
		behavior: declines, code: "card_declined", declineCode: "insufficient_funds", message: "Your card has insufficient funds.", attachDeclines: true},
	"pm_card_chargeCustomerFail": {typ: "card", brand: "visa", last4: "0341", expMonth: 12, expYear: 2034,
		behavior: declines, code: "card_declined", declineCode: "generic_decline", message: "Your card was declined."},
	"pm_card_authenticationRequired": {typ: "card", brand: "visa", last4: "3184", expMonth: 12, expYear: 2034, behavior: needsAuthentication},
}

// bankTemplate is every pm_usBankAccount… method.
var bankTemplate = template{typ: "us_bank_account", bankName: "STRIPE TEST BANK", last4: "6789", behavior: processes}

// testTemplate returns the template of one of Stripe's test methods.
func testTemplate(id string) (template, bool) {
	if t, ok := catalog[id]; ok {
		return t, true
	}
	if strings.HasPrefix(id, "pm_usBankAccount") {
		return bankTemplate, true
	}
	return template{}, false
}
