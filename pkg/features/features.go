// Package features is the catalog of tenant feature flags.
package features

// The feature flags a tenant can have.
const (
	// APIAccess lets the tenant's API keys authenticate at all.
	APIAccess = "api-access:enabled"
	// Webhooks makes events fire to the tenant's webhook endpoints.
	Webhooks = "webhooks:enabled"
	// PaymentProcessor allows Card and Ach payments.
	PaymentProcessor = "payment-processor:enabled"
	// MfaRequired keeps the tenant's members without a second factor out
	// of its routes (403 Mfa.EnrollmentRequired).
	MfaRequired = "mfa:required"
)

// Catalog lists every feature flag with what it does.
var Catalog = []struct{ Name, Description string }{
	{APIAccess, "API keys of the tenant can authenticate."},
	{Webhooks, "Events are delivered to the tenant's webhook endpoints."},
	{PaymentProcessor, "Card and ACH payments go through the payment processor."},
	{MfaRequired, "Staff sessions need a second factor to reach the tenant's routes."},
}

// Known reports whether name is a feature flag.
func Known(name string) bool {
	for _, f := range Catalog {
		if f.Name == name {
			return true
		}
	}
	return false
}
