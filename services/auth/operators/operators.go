// Package operators serves the platform operators' side of the auth
// service (docs/operators.md): operator invitations, and the tenant
// administration RPCs of TenantAdminService beyond those the admin command
// always had. The admin command calls them with the platform's own
// assertion; the gateway calls them for an operator's session on
// /api/admin, where support reads and platform-admin writes.
package operators

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/services/auth/store"
)

// InvitationTTL is how long an operator's invitation can be accepted, as
// a member's.
const InvitationTTL = 7 * 24 * time.Hour

var errTenantNotFound = apperr.NotFound("Tenant")

// Deps are what the server needs of the auth service.
type Deps struct {
	Store *store.Store
	// AwaitCaches waits out the gateways' cache window after a change
	// that moved the validation epoch.
	AwaitCaches func(context.Context)
	// ToTenant is the wire form of a tenant.
	ToTenant func(store.Tenant) *authv1.Tenant
	// NewToken returns a random token and the hash the database keeps.
	NewToken func() (token string, hash []byte)
	Now      func() time.Time
}

// Server implements the operator RPCs of TenantAdminService; the auth
// service's admin server embeds it for the others.
type Server struct {
	authv1.UnimplementedTenantAdminServiceServer
	d Deps
}

// New returns the server.
func New(d Deps) *Server { return &Server{d: d} }

// Authorize lets a call through when it is the platform's own (the admin
// command) or an operator's holding the role (write: platform-admin), and
// returns the audit actor. A tenant's key or member is 403.
func Authorize(ctx context.Context, write bool) (string, error) {
	if authctx.PlatformCall(ctx) {
		return authctx.SystemActor, nil
	}
	if _, ok := authctx.FromIncoming(ctx); ok {
		return "", apperr.Forbidden("Missing required role: " + authctx.RoleSupport)
	}
	p, err := authctx.RequireOperator(ctx, write)
	if err != nil {
		return "", err
	}
	return authctx.OperatorActor(p.UserID), nil
}

// InviteOperator invites a platform operator: the admin command only.
func (s *Server) InviteOperator(ctx context.Context, req *authv1.InviteOperatorRequest) (*authv1.InviteOperatorResponse, error) {
	if !authctx.PlatformCall(ctx) {
		return nil, apperr.Forbidden("Operators are invited with the admin command.")
	}
	var v apperr.Violations
	email, _, ok := normalize.Email(req.GetEmail())
	if !ok {
		v.Add("Email", "Email must be a valid email address of at most %d characters.", normalize.MaxEmailLength)
	}
	if !authctx.KnownPlatformRole(req.GetRole()) {
		v.Add("Role", "Role must be support or platform-admin.")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	token, hash := s.d.NewToken()
	id, err := s.d.Store.InviteOperator(ctx, store.NewOperatorInvitation{Email: email, Role: req.GetRole(), TokenHash: hash,
		ExpiresAt: s.d.Now().Add(InvitationTTL)})
	if err != nil {
		return nil, err
	}
	s.d.AwaitCaches(ctx)
	return &authv1.InviteOperatorResponse{UserId: id.String(), InvitationToken: token}, nil
}

// DeactivateOperator takes an operator's role away and ends their
// sessions and impersonation: the admin command only.
func (s *Server) DeactivateOperator(ctx context.Context, req *authv1.DeactivateOperatorRequest) (*authv1.DeactivateOperatorResponse, error) {
	if !authctx.PlatformCall(ctx) {
		return nil, apperr.Forbidden("Operators are deactivated with the admin command.")
	}
	id, err := s.d.Store.DeactivateOperator(ctx, req.GetEmail())
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Operator")
	}
	if err != nil {
		return nil, err
	}
	s.d.AwaitCaches(ctx)
	return &authv1.DeactivateOperatorResponse{UserId: id.String()}, nil
}

// ListTenants lists tenants, `q` matching name or slug.
func (s *Server) ListTenants(ctx context.Context, req *authv1.ListTenantsRequest) (*authv1.ListTenantsResponse, error) {
	if _, err := Authorize(ctx, false); err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.Tenant, int64, error) {
		return s.d.Store.ListTenants(ctx, store.TenantPage{Q: req.GetQ(), Limit: limit, Offset: offset})
	}, s.d.ToTenant)
	if err != nil {
		return nil, err
	}
	return &authv1.ListTenantsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// SetTenantFeatures switches the named flags and leaves the others.
func (s *Server) SetTenantFeatures(ctx context.Context, req *authv1.SetTenantFeaturesRequest) (*authv1.SetTenantFeaturesResponse, error) {
	actor, err := Authorize(ctx, true)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	for name := range req.GetFeatures() {
		if !features.Known(name) {
			v.Add("Features."+name, "'%s' is not a known feature.", name)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	t, err := s.update(ctx, req.GetTenantId(), actor, func(t *store.Tenant) {
		for name, on := range req.GetFeatures() {
			t.Features = slices.DeleteFunc(t.Features, func(f string) bool { return f == name })
			if on {
				t.Features = append(t.Features, name)
			}
		}
		slices.Sort(t.Features)
	})
	if err != nil {
		return nil, err
	}
	return &authv1.SetTenantFeaturesResponse{Tenant: t}, nil
}

// DeactivateTenant deactivates a tenant.
func (s *Server) DeactivateTenant(ctx context.Context, req *authv1.DeactivateTenantRequest) (*authv1.DeactivateTenantResponse, error) {
	t, err := s.setActive(ctx, req.GetTenantId(), false)
	if err != nil {
		return nil, err
	}
	return &authv1.DeactivateTenantResponse{Tenant: t}, nil
}

// ActivateTenant activates a tenant.
func (s *Server) ActivateTenant(ctx context.Context, req *authv1.ActivateTenantRequest) (*authv1.ActivateTenantResponse, error) {
	t, err := s.setActive(ctx, req.GetTenantId(), true)
	if err != nil {
		return nil, err
	}
	return &authv1.ActivateTenantResponse{Tenant: t}, nil
}

func (s *Server) setActive(ctx context.Context, tenantID string, active bool) (*authv1.Tenant, error) {
	actor, err := Authorize(ctx, true)
	if err != nil {
		return nil, err
	}
	return s.update(ctx, tenantID, actor, func(t *store.Tenant) { t.Active = active })
}

// update is the admin command's tenant update: the change, its audit row
// and the epoch move in one transaction, answered once no gateway can
// still serve the tenant as it was.
func (s *Server) update(ctx context.Context, tenantID, actor string, change func(*store.Tenant)) (*authv1.Tenant, error) {
	id, err := uuid.Parse(tenantID)
	if err != nil {
		return nil, errTenantNotFound
	}
	t, err := s.d.Store.UpdateTenant(ctx, id, actor, change)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	s.d.AwaitCaches(ctx)
	return s.d.ToTenant(t), nil
}
