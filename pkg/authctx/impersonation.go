package authctx

import (
	"context"

	"github.com/almoner/almoner/pkg/apperr"
)

// RefusedDuringImpersonation is the title of the 403 of an operation an
// impersonating operator may not make.
const RefusedDuringImpersonation = "Refused during impersonation"

// refusedWhileImpersonating is the one table of the operations refused to
// a principal that carries an impersonation (docs/operators.md), by full
// gRPC method: credentials, people and access; webhook endpoints; money
// going back; data leaving in bulk; bulk changes. The server interceptor
// applies it before any handler runs, so nothing changes. A test checks
// every name against the generated services.
var refusedWhileImpersonating = map[string]bool{
	// API keys.
	"/almoner.auth.v1.ApiKeyService/CreateApiKey": true,
	"/almoner.auth.v1.ApiKeyService/RevokeApiKey": true,
	// Users and roles. (MFA routes act on the session's own user, the
	// operator, never on the impersonated one.)
	"/almoner.auth.v1.UserService/CreateUser": true,
	"/almoner.auth.v1.UserService/UpdateUser": true,
	"/almoner.auth.v1.UserService/DeleteUser": true,
	"/almoner.auth.v1.UserService/CreateRole": true,
	// Support access.
	"/almoner.auth.v1.SupportAccessService/PutSupportAccess":    true,
	"/almoner.auth.v1.SupportAccessService/DeleteSupportAccess": true,
	// Webhook endpoints.
	"/almoner.webhooks.v1.WebhookService/CreateWebhook": true,
	"/almoner.webhooks.v1.WebhookService/UpdateWebhook": true,
	"/almoner.webhooks.v1.WebhookService/DeleteWebhook": true,
	// Refunds and voids; detaching payment methods.
	"/almoner.orders.v1.OrderService/CreateOrderRefund":                  true,
	"/almoner.orders.v1.OrderService/VoidOrder":                          true,
	"/almoner.orders.v1.PaymentMethodService/DeleteContactPaymentMethod": true,
	// Report exports and year-end runs.
	"/almoner.reports.v1.ReportService/ExportReport":               true,
	"/almoner.reports.v1.TaxStatementService/StartTaxStatementRun": true,
	// Imports and merges.
	"/almoner.imports.v1.ImportService/UploadImport":    true,
	"/almoner.contacts.v1.ContactService/MergeContacts": true,
}

// checkImpersonation refuses method to an impersonating principal when
// the table lists it.
func checkImpersonation(ctx context.Context, method string) error {
	p, ok := ctx.Value(incomingKey{}).(Principal)
	if ok && p.Impersonation != "" && refusedWhileImpersonating[method] {
		return apperr.ToStatus(apperr.Forbidden(RefusedDuringImpersonation)).Err()
	}
	return nil
}

// ImpersonatorActor is the audit impersonator of p: operator:<userId>
// while impersonating, "" otherwise.
func (p Principal) ImpersonatorActor() string {
	if p.Impersonator == "" {
		return ""
	}
	return OperatorActor(p.Impersonator)
}

// Impersonator returns the impersonator of the call's principal
// (operator:<userId>), "" when it is not impersonating: what audit rows
// record beside the actor.
func Impersonator(ctx context.Context) string {
	p, _ := ctx.Value(incomingKey{}).(Principal)
	return p.ImpersonatorActor()
}
