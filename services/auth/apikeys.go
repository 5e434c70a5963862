package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/auth/keyformat"
	"github.com/almoner/almoner/services/auth/store"
)

type apiKeyServer struct {
	authv1.UnimplementedApiKeyServiceServer
	s *Service
}

// ListApiKeys lists the tenant's keys that are not revoked.
func (a *apiKeyServer) ListApiKeys(ctx context.Context, req *authv1.ListApiKeysRequest) (*authv1.ListApiKeysResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.APIKeysManage)
	if err != nil {
		return nil, err
	}
	// Uses this replica has seen but not yet written are newer than the
	// rows: show them, so a caller checking lastUsedAt during a rotation
	// sees the use it just made, without a write per list. Read before
	// the rows (PendingOf says why).
	pending := a.s.usage.PendingOf(p.Tenant())
	keys, err := a.s.store.ListKeys(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	out := &authv1.ListApiKeysResponse{ApiKeys: make([]*authv1.ApiKey, 0, len(keys))}
	for _, k := range keys {
		if at, ok := pending[k.ID]; ok && (k.LastUsedAt == nil || at.After(*k.LastUsedAt)) {
			k.LastUsedAt = &at
		}
		out.ApiKeys = append(out.ApiKeys, toAPIKey(k))
	}
	return out, nil
}

// CreateApiKey creates a key. A key may only grant scopes its creator holds:
// otherwise api-keys:manage alone would be every permission.
func (a *apiKeyServer) CreateApiKey(ctx context.Context, req *authv1.CreateApiKeyRequest) (*authv1.CreateApiKeyResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.APIKeysManage)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	creator, err := a.callerKey(ctx, tenantID, p)
	if err != nil {
		return nil, err
	}
	// A key that expires may only make keys that expire no later than it
	// does: otherwise a short-lived key could outlive itself through a
	// copy of its scopes with no expiry.
	grant, err := validateKeyRequest(req.GetName(), req.GetScopes(), req.GetExpiresAt(), a.s.now(), creator.ExpiresAt)
	if err != nil {
		return nil, err
	}
	for _, sc := range grant {
		if !p.HasScope(sc) {
			return nil, apperr.MissingPermission(sc)
		}
	}
	created, err := a.s.createKey(ctx, tenantID, req.GetName(), grant, req.GetExpiresAt(), p.Actor(), a.s.cfg.KeyLimit)
	if err != nil {
		return nil, err
	}
	return &authv1.CreateApiKeyResponse{ApiKey: created}, nil
}

// callerKey reads the row of the key that made the call, by the key id the
// gateway put in the principal after validating it: the caller cannot
// choose it, and the row, not the request, says when the key expires. A
// principal without a live key row (revoked since the gateway validated
// it) is refused as any unusable key is. A staff session's principal has
// no key: it answers an empty one, which never expires.
func (a *apiKeyServer) callerKey(ctx context.Context, tenantID uuid.UUID, p authctx.Principal) (store.APIKey, error) {
	if p.UserID != "" {
		// A staff session has no key of its own, and no expiry to pass on.
		return store.APIKey{}, nil
	}
	id, err := uuid.Parse(p.KeyID)
	if err != nil {
		return store.APIKey{}, apperr.Unauthenticated()
	}
	k, revoked, err := a.s.store.GetKey(ctx, tenantID, id)
	if errors.Is(err, db.ErrNotFound) || revoked {
		return store.APIKey{}, apperr.Unauthenticated()
	}
	return k, err
}

// RevokeApiKey revokes a key; the next request with it gets 401.
func (a *apiKeyServer) RevokeApiKey(ctx context.Context, req *authv1.RevokeApiKeyRequest) (*authv1.RevokeApiKeyResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.APIKeysManage)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	id, err := uuid.Parse(req.GetApiKeyId())
	if err != nil {
		return nil, errKeyNotFound
	}
	// Revoking needs every scope the target holds, as creating needs every
	// scope granted: otherwise a narrow key with api-keys:manage could
	// take away the tenant's broader keys. A key's scopes never change, so
	// this read cannot go stale before the revocation below.
	target, revoked, err := a.s.store.GetKey(ctx, tenantID, id)
	if errors.Is(err, db.ErrNotFound) || revoked {
		return nil, errKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	for _, sc := range target.Scopes {
		if !p.HasScope(sc) {
			return nil, apperr.MissingPermission(sc)
		}
	}
	if err := a.s.store.RevokeKey(ctx, tenantID, id, p.Actor()); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return nil, errKeyNotFound
		}
		return nil, err
	}
	// Answer only once no gateway can still serve the key from its cache.
	a.s.awaitCaches(ctx)
	return &authv1.RevokeApiKeyResponse{}, nil
}

// validateKeyRequest checks a key's name, scopes and expiry and returns the
// scopes to grant, de-duplicated in catalog order. notAfter, when set, is
// the latest expiry allowed (the creating key's own); an omitted expiry is
// then refused as well.
func validateKeyRequest(name string, requested []string, expiresAt *timestamppb.Timestamp, now time.Time, notAfter *time.Time) ([]string, error) {
	var v apperr.Violations
	switch n := utf8.RuneCountInString(name); {
	case n == 0 || len(trimSpace(name)) == 0:
		v.Add("Name", "'Name' must not be empty.")
	case n > 100:
		v.Add("Name", "'Name' must be 100 characters or fewer.")
	}
	want := map[string]bool{}
	if len(requested) == 0 {
		v.Add("Scopes", "'Scopes' must hold at least one scope.")
	}
	if len(requested) > 100 {
		v.Add("Scopes", "'Scopes' must hold 100 scopes or fewer.")
	} else {
		for i, sc := range requested {
			if !scopes.Known(sc) {
				v.Add(indexPath("Scopes", i), "'%s' is not a known scope.", truncate(sc, 64))
				continue
			}
			want[sc] = true
		}
	}
	switch {
	case expiresAt != nil && !expiresAt.AsTime().After(now):
		v.Add("ExpiresAt", "'ExpiresAt' must be in the future.")
	case notAfter != nil && expiresAt == nil:
		v.Add("ExpiresAt", "'ExpiresAt' is required: the key making this request expires at %s, and a key it creates must expire no later.", notAfter.UTC().Format(time.RFC3339Nano))
	case notAfter != nil && expiresAt.AsTime().After(*notAfter):
		v.Add("ExpiresAt", "'ExpiresAt' must be no later than %s, when the key making this request expires.", notAfter.UTC().Format(time.RFC3339Nano))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	grant := make([]string, 0, len(want))
	for _, sc := range scopes.All() {
		if want[sc] {
			grant = append(grant, sc)
		}
	}
	return grant, nil
}

// createKey makes, stores and returns a new key with its plain text. With
// limit > 0 it refuses a tenant that already has limit active keys.
func (s *Service) createKey(ctx context.Context, tenantID uuid.UUID, name string, grant []string, expiresAt *timestamppb.Timestamp, actor string, limit int) (*authv1.CreatedApiKey, error) {
	key, err := keyformat.New(s.cfg.Environment)
	if err != nil {
		return nil, err
	}
	row := store.APIKey{
		TenantID: tenantID, Name: trimSpace(name), LookupID: key.LookupID, KeyPrefix: key.Prefix,
		KeyHash: key.Hash(), Environment: key.Environment, Scopes: grant,
	}
	if expiresAt != nil {
		t := expiresAt.AsTime()
		row.ExpiresAt = &t
	}
	saved, err := s.store.CreateKey(ctx, row, actor, limit)
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Tenant")
	}
	if errors.Is(err, store.ErrKeyLimit) {
		return nil, apperr.Rule(codeKeyLimit, fmt.Sprintf(
			"The tenant already has %d active API keys, the most it may have; revoke one before creating another.", limit))
	}
	if err != nil {
		return nil, err
	}
	return toCreatedAPIKey(saved, key.Plain), nil
}
