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

// routeSet is the REST routes of one proto service: its full name (which
// its bindings in the descriptors carry) and its generated Register…Handler.
type routeSet struct {
	service  string
	register registerFunc
}

// registry lists, per upstream service, the generated route sets it serves,
// in the order they are registered. A new service adds its entry here.
// Routes no proto binds are added after these: processor notifications
// (registerNotifications) and the import upload, POST …/imports
// (registerImports).
var registry = map[string][]routeSet{
	authName: {
		{authv1.ApiKeyService_ServiceDesc.ServiceName, authv1.RegisterApiKeyServiceHandler},
		{authv1.UserService_ServiceDesc.ServiceName, authv1.RegisterUserServiceHandler},
		{authv1.StaffAuthService_ServiceDesc.ServiceName, authv1.RegisterStaffAuthServiceHandler},
		{authv1.MfaService_ServiceDesc.ServiceName, authv1.RegisterMfaServiceHandler},
		{authv1.TenantAdminService_ServiceDesc.ServiceName, authv1.RegisterTenantAdminServiceHandler},
		{authv1.SupportAccessService_ServiceDesc.ServiceName, authv1.RegisterSupportAccessServiceHandler},
		{authv1.TenantSettingsService_ServiceDesc.ServiceName, authv1.RegisterTenantSettingsServiceHandler},
		{authv1.ImpersonationService_ServiceDesc.ServiceName, authv1.RegisterImpersonationServiceHandler},
		{authv1.OperationsService_ServiceDesc.ServiceName, authv1.RegisterOperationsServiceHandler},
	},
	"contacts": {
		{contactsv1.ContactService_ServiceDesc.ServiceName, contactsv1.RegisterContactServiceHandler},
		{contactsv1.ContactFormService_ServiceDesc.ServiceName, contactsv1.RegisterContactFormServiceHandler},
	},
	"imports": {
		{importsv1.ImportService_ServiceDesc.ServiceName, importsv1.RegisterImportServiceHandler},
	},
	"inventory": {
		{inventoryv1.InventoryService_ServiceDesc.ServiceName, inventoryv1.RegisterInventoryServiceHandler},
		{inventoryv1.ShipmentService_ServiceDesc.ServiceName, inventoryv1.RegisterShipmentServiceHandler},
	},
	"orders": {
		{ordersv1.OrderService_ServiceDesc.ServiceName, ordersv1.RegisterOrderServiceHandler},
		{ordersv1.FundService_ServiceDesc.ServiceName, ordersv1.RegisterFundServiceHandler},
		{ordersv1.BatchService_ServiceDesc.ServiceName, ordersv1.RegisterBatchServiceHandler},
		{ordersv1.RecurringDonationService_ServiceDesc.ServiceName, ordersv1.RegisterRecurringDonationServiceHandler},
		{ordersv1.PaymentMethodService_ServiceDesc.ServiceName, ordersv1.RegisterPaymentMethodServiceHandler},
		{ordersv1.OrderAcknowledgementService_ServiceDesc.ServiceName, ordersv1.RegisterOrderAcknowledgementServiceHandler},
	},
	"reports": {
		{reportsv1.ReportService_ServiceDesc.ServiceName, reportsv1.RegisterReportServiceHandler},
		{reportsv1.OrganizationProfileService_ServiceDesc.ServiceName, reportsv1.RegisterOrganizationProfileServiceHandler},
		{reportsv1.ReceiptService_ServiceDesc.ServiceName, reportsv1.RegisterReceiptServiceHandler},
		{reportsv1.TaxStatementService_ServiceDesc.ServiceName, reportsv1.RegisterTaxStatementServiceHandler},
		{reportsv1.BrandingService_ServiceDesc.ServiceName, reportsv1.RegisterBrandingServiceHandler},
		{reportsv1.DocumentTemplateService_ServiceDesc.ServiceName, reportsv1.RegisterDocumentTemplateServiceHandler},
		{reportsv1.LetterRunService_ServiceDesc.ServiceName, reportsv1.RegisterLetterRunServiceHandler},
		{reportsv1.FulfillmentDocumentService_ServiceDesc.ServiceName, reportsv1.RegisterFulfillmentDocumentServiceHandler},
		{reportsv1.DashboardService_ServiceDesc.ServiceName, reportsv1.RegisterDashboardServiceHandler},
		{reportsv1.CohortService_ServiceDesc.ServiceName, reportsv1.RegisterCohortServiceHandler},
	},
	"webhooks": {
		{webhooksv1.WebhookService_ServiceDesc.ServiceName, webhooksv1.RegisterWebhookServiceHandler},
		{webhooksv1.EventService_ServiceDesc.ServiceName, webhooksv1.RegisterEventServiceHandler},
		{webhooksv1.AuditLogService_ServiceDesc.ServiceName, webhooksv1.RegisterAuditLogServiceHandler},
	},
}

// Services returns the names of the services the gateway can route to.
func Services() []string {
	out := make([]string, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	return out
}
