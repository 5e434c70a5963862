// Package scopes is the catalog of permission scopes an API key can carry.
// It is the one list in code: key creation validates against it, services
// name their required scope from it, and docs/scopes.md is checked against
// it by a test.
package scopes

// The scopes. Each constant is the exact name a key carries.
const (
	APIKeysManage            = "api-keys:manage"
	AuditLogsView            = "audit-logs:view"
	BatchesView              = "batches:view"
	BatchesManage            = "batches:manage"
	CohortsManage            = "cohorts:manage"
	ContactsView             = "contacts:view"
	ContactsCreate           = "contacts:create"
	ContactsEdit             = "contacts:edit"
	ContactsMerge            = "contacts:merge"
	DocumentsManage          = "documents:manage"
	DonationsView            = "donations:view"
	EventsView               = "events:view"
	FundsView                = "funds:view"
	FundsManage              = "funds:manage"
	ImportsManage            = "imports:manage"
	InventoryView            = "inventory:view"
	InventoryCreate          = "inventory:create"
	InventoryEdit            = "inventory:edit"
	OrdersView               = "orders:view"
	OwnersManage             = "owners:manage"
	OrdersCreate             = "orders:create"
	OrdersVoid               = "orders:void"
	OrdersRefund             = "orders:refund"
	PaymentMethodsManage     = "payment-methods:manage"
	RecurringDonationsView   = "recurring-donations:view"
	RecurringDonationsCancel = "recurring-donations:cancel"
	RecurringDonationsManage = "recurring-donations:manage"
	ReportsView              = "reports:view"
	ReportsExport            = "reports:export"
	ReportsManage            = "reports:manage"
	SupportAccessManage      = "support-access:manage"
	ShipmentsView            = "shipments:view"
	ShipmentsManage          = "shipments:manage"
	TaxStatementsManage      = "tax-statements:manage"
	TenantSettingsManage     = "tenant-settings:manage"
	UsersManage              = "users:manage"
	WebhooksView             = "webhooks:view"
	WebhooksManage           = "webhooks:manage"
)

// Scope is one catalog entry.
type Scope struct {
	Name        string
	Description string
}

// Catalog lists every scope, in a stable order.
var Catalog = []Scope{
	{APIKeysManage, "List, create and revoke the tenant's API keys."},
	{AuditLogsView, "Read audit feeds, such as a contact's audit log."},
	{BatchesView, "List and read accounting batches (operator tooling)."},
	{BatchesManage, "Open and close accounting batches (operator tooling)."},
	{CohortsManage, "Create, update and delete the tenant's cohorts (saved donor segments)."},
	{ContactsView, "List and read contacts and their dashboards; check for duplicates."},
	{ContactsCreate, "Create contacts."},
	{ContactsEdit, "Update contacts."},
	{ContactsMerge, "Merge a duplicate contact into another: its gifts, schedules, payment methods and details move, and it becomes a tombstone."},
	{DocumentsManage, "Edit document templates, run acknowledgement letters and mark gifts acknowledged or not to acknowledge."},
	{DonationsView, "Read donation history (orders)."},
	{EventsView, "Read the tenant's event feed: every change, in commit order."},
	{FundsView, "List funds."},
	{FundsManage, "Create and update funds."},
	{ImportsManage, "Upload bulk imports of contacts and gifts (CSV or JSON Lines) and follow them."},
	{InventoryView, "List and read inventory items, stock and prices."},
	{InventoryCreate, "Create inventory items (admin tier)."},
	{InventoryEdit, "Update inventory items (admin tier)."},
	{OrdersView, "Read orders (same as donations:view)."},
	{OrdersCreate, "Create orders: gifts, item sales and recurring schedules."},
	{OrdersVoid, "Void an order (operator-only)."},
	{OrdersRefund, "Refund an order in full or in part (operator-only)."},
	{OwnersManage, "Grant, change or take away the owner role of a staff user (with users:manage)."},
	{PaymentMethodsManage, "Save a donor's card or bank account with a payment; list and remove a contact's saved payment methods."},
	{RecurringDonationsView, "List and read recurring donation schedules."},
	{RecurringDonationsCancel, "Cancel a recurring donation schedule."},
	{RecurringDonationsManage, "Amend, pause, resume and skip recurring donation schedules."},
	{ReportsView, "List report types and saved reports; run them."},
	{ReportsExport, "Export report runs as CSV, Excel or PDF."},
	{ReportsManage, "Create, update and delete saved report definitions."},
	{SupportAccessManage, "Grant and withdraw platform support's access (impersonation) and list the impersonations."},
	{ShipmentsView, "List and read shipments; download packing slips and pick lists."},
	{ShipmentsManage, "Pack, ship, deliver, cancel, return and split shipments; correct their addresses; ship in bulk."},
	{TaxStatementsManage, "Start year-end tax statement runs, follow them and download their statements."},
	{TenantSettingsManage, "Read and change the tenant settings (currency, fiscal year, time zone, retry days, batch close time, receipt threshold), and the organization profile and the branding (colors, logo) printed on receipts, statements and letters."},
	{UsersManage, "List staff users, invite them, change their roles and remove them."},
	{WebhooksView, "List webhook endpoints, event types and deliveries."},
	{WebhooksManage, "Register, update, delete and test webhook endpoints; send deliveries again and replay events."},
}

var known = func() map[string]bool {
	m := make(map[string]bool, len(Catalog))
	for _, s := range Catalog {
		m[s.Name] = true
	}
	return m
}()

// Known reports whether name is in the catalog.
func Known(name string) bool { return known[name] }

// All returns every scope name in catalog order.
func All() []string {
	out := make([]string, len(Catalog))
	for i, s := range Catalog {
		out[i] = s.Name
	}
	return out
}
