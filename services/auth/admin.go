package auth

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/features"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/auth/operators"
	"github.com/almoner/almoner/services/auth/store"
)

// adminServer serves the operator RPCs behind `almoner admin`. Those with
// a route are served to operators' sessions on /api/admin too; the others
// are reachable on the internal gRPC port only. The operator RPCs added
// for /api/admin are the embedded operators.Server's.
type adminServer struct {
	*operators.Server
	s *Service
}

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// slugify derives a slug from a tenant name: lowercase ASCII letters and
// digits, other runs folded to one hyphen.
func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	return s
}

func (a *adminServer) CreateTenant(ctx context.Context, req *authv1.CreateTenantRequest) (*authv1.CreateTenantResponse, error) {
	actor, err := operators.Authorize(ctx, true)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	name := strings.TrimSpace(req.GetName())
	if name == "" {
		v.Add("Name", "'Name' must not be empty.")
	} else if utf8.RuneCountInString(name) > 200 {
		v.Add("Name", "'Name' must be 200 characters or fewer.")
	}
	slug := req.GetSlug()
	if slug == "" {
		slug = slugify(name)
	}
	if !slugPattern.MatchString(slug) {
		v.Add("Slug", "'Slug' must be 1 to 63 lowercase letters, digits or hyphens.")
	}
	feats := req.GetFeatures()
	if len(feats) == 0 {
		feats = []string{features.APIAccess}
	}
	var clean []string
	for i, f := range feats {
		if !features.Known(f) {
			v.Add(indexPath("Features", i), "'%s' is not a known feature.", truncate(f, 64))
		} else if !slices.Contains(clean, f) {
			clean = append(clean, f)
		}
	}
	currency := req.GetDefaultCurrency()
	if currency == "" {
		currency = "USD"
	}
	if !money.Known(currency) {
		v.Add("DefaultCurrency", "'%s' is not an ISO 4217 currency code.", truncate(currency, 8))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	t, err := a.s.store.CreateTenant(ctx, store.Tenant{Name: name, Slug: slug, Features: clean, DefaultCurrency: currency}, actor)
	if errors.Is(err, store.ErrSlugTaken) {
		return nil, apperr.Invalid(apperr.Violation{Field: "Slug", Message: "The slug '" + slug + "' is already taken."})
	}
	if err != nil {
		return nil, err
	}
	return &authv1.CreateTenantResponse{Tenant: toTenant(t)}, nil
}

func (a *adminServer) GetTenant(ctx context.Context, req *authv1.GetTenantRequest) (*authv1.GetTenantResponse, error) {
	if _, err := operators.Authorize(ctx, false); err != nil {
		return nil, err
	}
	id, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, errTenantNotFound
	}
	t, err := a.s.store.GetTenant(ctx, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	return &authv1.GetTenantResponse{Tenant: toTenant(t)}, nil
}

func (a *adminServer) SetTenantFeature(ctx context.Context, req *authv1.SetTenantFeatureRequest) (*authv1.SetTenantFeatureResponse, error) {
	if !features.Known(req.GetFeature()) {
		return nil, apperr.Invalid(apperr.Violation{Field: "Feature", Message: "'" + truncate(req.GetFeature(), 64) + "' is not a known feature."})
	}
	t, err := a.updateTenant(ctx, req.GetTenantId(), func(t *store.Tenant) {
		t.Features = slices.DeleteFunc(t.Features, func(f string) bool { return f == req.GetFeature() })
		if req.GetEnabled() {
			t.Features = append(t.Features, req.GetFeature())
			slices.Sort(t.Features)
		}
	})
	if err != nil {
		return nil, err
	}
	return &authv1.SetTenantFeatureResponse{Tenant: t}, nil
}

func (a *adminServer) SetTenantActive(ctx context.Context, req *authv1.SetTenantActiveRequest) (*authv1.SetTenantActiveResponse, error) {
	t, err := a.updateTenant(ctx, req.GetTenantId(), func(t *store.Tenant) { t.Active = req.GetActive() })
	if err != nil {
		return nil, err
	}
	return &authv1.SetTenantActiveResponse{Tenant: t}, nil
}

func (a *adminServer) updateTenant(ctx context.Context, tenantID string, change func(*store.Tenant)) (*authv1.Tenant, error) {
	id, err := uuid.Parse(tenantID)
	if err != nil {
		return nil, errTenantNotFound
	}
	t, err := a.s.store.UpdateTenant(ctx, id, authctx.SystemActor, change)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errTenantNotFound
	}
	if err != nil {
		return nil, err
	}
	// Answer only once no gateway can still serve the tenant's keys as
	// they were before the change.
	a.s.awaitCaches(ctx)
	return toTenant(t), nil
}

// CreateKey creates a key as an operator; the scope "all" grants the whole
// catalog.
func (a *adminServer) CreateKey(ctx context.Context, req *authv1.CreateKeyRequest) (*authv1.CreateKeyResponse, error) {
	id, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, errTenantNotFound
	}
	requested := req.GetScopes()
	if len(requested) == 1 && requested[0] == "all" {
		requested = scopes.All()
	}
	// An operator is bound neither by a creating key's expiry (there is
	// none) nor by the tenant's key cap: the admin command is how a tenant
	// at its cap, or with no working key left, gets one again.
	grant, err := validateKeyRequest(req.GetName(), requested, req.GetExpiresAt(), a.s.now(), nil)
	if err != nil {
		return nil, err
	}
	created, err := a.s.createKey(ctx, id, req.GetName(), grant, req.GetExpiresAt(), authctx.SystemActor, 0)
	if err != nil {
		return nil, err
	}
	return &authv1.CreateKeyResponse{ApiKey: created}, nil
}

// InviteUser invites a person to a tenant as an operator, the way a
// tenant gets its first owner: it returns the invitation's token and
// queues the invitation email too.
func (a *adminServer) InviteUser(ctx context.Context, req *authv1.InviteUserRequest) (*authv1.InviteUserResponse, error) {
	id, err := uuid.Parse(req.GetTenantId())
	if err != nil {
		return nil, errTenantNotFound
	}
	email, err := validateInvite(req.GetEmail(), req.GetRole())
	if err != nil {
		return nil, err
	}
	m, token, err := a.s.invite(ctx, id, email, req.GetRole(), authctx.SystemActor)
	if err != nil {
		return nil, err
	}
	return &authv1.InviteUserResponse{UserId: m.ID.String(), InvitationToken: token}, nil
}
