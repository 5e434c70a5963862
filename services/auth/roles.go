package auth

import (
	"context"
	"slices"
	"strings"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// The built-in roles. docs/scopes.md lists each one's scopes; a test keeps
// the page in step.
const (
	RoleOwner      = "owner"
	RoleAdmin      = "admin"
	RoleFundraiser = "fundraiser"
	RoleFinance    = "finance"
	RoleViewer     = "viewer"
)

// roleNames are the built-in roles in the order documentation lists them.
var roleNames = []string{RoleOwner, RoleAdmin, RoleFundraiser, RoleFinance, RoleViewer}

// roleScopes maps each built-in role to its scopes.
var roleScopes = map[string][]string{
	// The owner holds every scope.
	RoleOwner: scopes.All(),
	// An admin holds every scope but the right to change owners.
	RoleAdmin: without(scopes.All(), scopes.OwnersManage),
	// A fundraiser works with donors and their gifts.
	RoleFundraiser: {
		scopes.AuditLogsView, scopes.ContactsView, scopes.ContactsCreate, scopes.ContactsEdit, scopes.ContactsMerge,
		scopes.DonationsView, scopes.FundsView, scopes.ImportsManage, scopes.InventoryView, scopes.OrdersView, scopes.OrdersCreate,
		scopes.PaymentMethodsManage, scopes.RecurringDonationsView, scopes.RecurringDonationsCancel, scopes.RecurringDonationsManage,
		scopes.ReportsView, scopes.ReportsExport, scopes.ShipmentsView, scopes.ShipmentsManage,
	},
	// Finance keeps the books: refunds, voids, batches, funds, statements.
	RoleFinance: {
		scopes.AuditLogsView, scopes.BatchesView, scopes.BatchesManage, scopes.ContactsView, scopes.DonationsView,
		scopes.FundsView, scopes.FundsManage, scopes.InventoryView, scopes.OrdersView, scopes.OrdersCreate, scopes.OrdersVoid,
		scopes.OrdersRefund, scopes.PaymentMethodsManage, scopes.RecurringDonationsView, scopes.RecurringDonationsCancel,
		scopes.RecurringDonationsManage, scopes.ReportsView, scopes.ReportsExport, scopes.ReportsManage, scopes.ShipmentsView, scopes.TaxStatementsManage,
	},
	// A viewer reads: every :view scope.
	RoleViewer: viewScopes(),
}

// RoleScopes returns a built-in role's scopes; false for an unknown role.
func RoleScopes(role string) ([]string, bool) {
	s, ok := roleScopes[role]
	return s, ok
}

func without(all []string, drop string) []string {
	return slices.DeleteFunc(all, func(s string) bool { return s == drop })
}

func viewScopes() []string {
	var out []string
	for _, s := range scopes.All() {
		if strings.HasSuffix(s, ":view") {
			out = append(out, s)
		}
	}
	return out
}

// ListRoles lists the built-in roles.
func (u *userServer) ListRoles(ctx context.Context, req *authv1.ListRolesRequest) (*authv1.ListRolesResponse, error) {
	if _, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage); err != nil {
		return nil, err
	}
	out := &authv1.ListRolesResponse{Roles: make([]*authv1.Role, 0, len(roleNames))}
	for _, name := range roleNames {
		out.Roles = append(out.Roles, &authv1.Role{Name: name, Scopes: roleScopes[name], BuiltIn: true})
	}
	return out, nil
}
