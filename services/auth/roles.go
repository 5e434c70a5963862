package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/auth/store"
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
		scopes.AuditLogsView, scopes.CohortsManage, scopes.ContactsView, scopes.ContactsCreate, scopes.ContactsEdit, scopes.ContactsMerge,
		scopes.DocumentsManage, scopes.DonationsView, scopes.FundsView, scopes.ImportsManage, scopes.InventoryView, scopes.OrdersView, scopes.OrdersCreate,
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

// ListRoles lists the built-in roles, then the tenant's custom ones.
func (u *userServer) ListRoles(ctx context.Context, req *authv1.ListRolesRequest) (*authv1.ListRolesResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage)
	if err != nil {
		return nil, err
	}
	custom, err := u.s.store.Roles(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	out := &authv1.ListRolesResponse{Roles: make([]*authv1.Role, 0, len(roleNames)+len(custom))}
	for _, name := range roleNames {
		out.Roles = append(out.Roles, &authv1.Role{Name: name, Scopes: roleScopes[name], BuiltIn: true})
	}
	for _, r := range custom {
		out.Roles = append(out.Roles, &authv1.Role{Name: r.Name, Scopes: r.Scopes})
	}
	return out, nil
}

// roleName is a custom role's name.
var roleName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,49}$`)

// CreateRole makes a custom role. The caller must hold every scope it
// grants, so users:manage cannot mint a role above its holder.
func (u *userServer) CreateRole(ctx context.Context, req *authv1.CreateRoleRequest) (*authv1.CreateRoleResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage)
	if err != nil {
		return nil, err
	}
	sc, err := validateRole(req.GetName(), req.GetScopes())
	if err != nil {
		return nil, err
	}
	for _, x := range sc {
		if !p.HasScope(x) {
			return nil, apperr.MissingPermission(x)
		}
	}
	r, err := u.s.store.CreateRole(ctx, p.Tenant(), req.GetName(), sc, p.Actor())
	if errors.Is(err, store.ErrRoleExists) {
		return nil, errRoleTaken()
	}
	if err != nil {
		return nil, err
	}
	return &authv1.CreateRoleResponse{Role: &authv1.Role{Name: r.Name, Scopes: r.Scopes}}, nil
}

func errRoleTaken() error {
	var v apperr.Violations
	v.Add("Name", "A role of this name exists.")
	return v.Err()
}

// validateRole checks a custom role's name and scopes; it returns the
// scopes in catalog order, without repeats.
func validateRole(name string, sc []string) ([]string, error) {
	var v apperr.Violations
	if !roleName.MatchString(name) {
		v.Add("Name", "Name must be 1 to 50 lowercase letters, digits and hyphens, starting with a letter.")
	} else if _, builtIn := RoleScopes(name); builtIn {
		v.Add("Name", "%s is a built-in role.", name)
	}
	if len(sc) == 0 {
		v.Add("Scopes", "Scopes must name at least one scope.")
	}
	for i, x := range sc {
		if !slices.Contains(scopes.All(), x) {
			v.Add(fmt.Sprintf("Scopes[%d]", i), "Unknown scope %q (docs/scopes.md lists them).", x)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(scopes.All(), func(x string) bool { return !slices.Contains(sc, x) }), nil
}

// assignable checks that role may be given in the caller's tenant: a
// built-in role, or a custom role whose every scope the caller holds
// (owner's own rule is owners:manage, checked where members change).
func (s *Service) assignable(ctx context.Context, p authctx.Principal, role string) error {
	if _, ok := RoleScopes(role); ok {
		return nil
	}
	var custom *store.Role
	if roleName.MatchString(role) {
		list, err := s.store.Roles(ctx, p.Tenant())
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(list, func(r store.Role) bool { return r.Name == role }); i >= 0 {
			custom = &list[i]
		}
	}
	if custom == nil {
		var v apperr.Violations
		v.Add("Role", "Role must be owner, admin, fundraiser, finance, viewer or one of the tenant's custom roles.")
		return v.Err()
	}
	for _, x := range custom.Scopes {
		if !p.HasScope(x) {
			return apperr.MissingPermission(x)
		}
	}
	return nil
}
