package gateway

import (
	"context"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
)

const authName = "auth"

// registerFunc adds one generated service's REST routes to the mux, served
// over conn. These are grpc-gateway's Register…Handler functions: every
// route makes a real gRPC call, in one process and across processes alike.
type registerFunc func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error

// registry lists, per upstream service, the generated route sets it serves.
// A new service adds its line here. Routes no proto binds are added after
// these: processor notifications (registerNotifications) and the import
// upload, POST …/imports (registerImports).
var registry = map[string][]registerFunc{
	authName:    {authv1.RegisterApiKeyServiceHandler, authv1.RegisterUserServiceHandler, authv1.RegisterStaffAuthServiceHandler, authv1.RegisterMfaServiceHandler, authv1.RegisterTenantAdminServiceHandler, authv1.RegisterSupportAccessServiceHandler, authv1.RegisterTenantSettingsServiceHandler, authv1.RegisterImpersonationServiceHandler, authv1.RegisterOperationsServiceHandler},
	"contacts":  {contactsv1.RegisterContactServiceHandler, contactsv1.RegisterContactFormServiceHandler},
	"imports":   {importsv1.RegisterImportServiceHandler},
	"inventory": {inventoryv1.RegisterInventoryServiceHandler, inventoryv1.RegisterShipmentServiceHandler},
	"orders": {ordersv1.RegisterOrderServiceHandler, ordersv1.RegisterFundServiceHandler, ordersv1.RegisterBatchServiceHandler, ordersv1.RegisterRecurringDonationServiceHandler, ordersv1.RegisterPaymentMethodServiceHandler,
		ordersv1.RegisterOrderAcknowledgementServiceHandler},
	"reports": {reportsv1.RegisterReportServiceHandler, reportsv1.RegisterOrganizationProfileServiceHandler, reportsv1.RegisterReceiptServiceHandler, reportsv1.RegisterTaxStatementServiceHandler,
		reportsv1.RegisterBrandingServiceHandler, reportsv1.RegisterDocumentTemplateServiceHandler,
		reportsv1.RegisterLetterRunServiceHandler, reportsv1.RegisterFulfillmentDocumentServiceHandler, reportsv1.RegisterDashboardServiceHandler,
		reportsv1.RegisterCohortServiceHandler},
	"webhooks": {webhooksv1.RegisterWebhookServiceHandler, webhooksv1.RegisterEventServiceHandler, webhooksv1.RegisterAuditLogServiceHandler},
}

// Services returns the names of the services the gateway can route to.
func Services() []string {
	out := make([]string, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	return out
}
