// Package authctx carries the authenticated caller from the gateway to the
// services in gRPC metadata, and checks it in the services.
//
// The gateway validates X-Api-Key with the auth service and writes the
// principal into outgoing metadata; it strips every client-supplied header
// that could collide with these keys. Services trust this metadata only
// because they are reachable from the gateway alone (loopback in one
// process, a NetworkPolicy on Kubernetes), and still check the scope each
// RPC needs, so calling a service directly is no way around authorization.
package authctx

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/almoner/almoner/pkg/apperr"
)

// Metadata keys of the principal.
const (
	keyTenant   = "x-almoner-tenant-id"
	keyKeyID    = "x-almoner-key-id"
	keyPrefix   = "x-almoner-key-prefix"
	keyScopes   = "x-almoner-scopes"
	keyFeatures = "x-almoner-features"
)

// Keys lists the metadata keys this package owns, so the gateway can refuse
// to forward any client header that maps onto one of them.
var Keys = []string{keyTenant, keyKeyID, keyPrefix, keyScopes, keyFeatures}

// SystemActor is the audit actor of work the platform does by itself
// (recurring charges, the dispatcher).
const SystemActor = "system"

// Principal is an authenticated API key.
type Principal struct {
	TenantID  string
	KeyID     string
	KeyPrefix string
	Scopes    []string
	Features  []string
}

// Actor is the audit-log actor of the principal: api-key:<keyPrefix>, or
// the platform's own actor for a System principal.
func (p Principal) Actor() string {
	if a, ok := strings.CutPrefix(p.KeyID, systemKeyID); ok {
		return a
	}
	return "api-key:" + p.KeyPrefix
}

// systemKeyID starts the key id of a System principal.
const systemKeyID = "system:"

// System is the principal of work the platform does for a tenant on its
// own (a processor's notification releasing stock, say), with just the
// scopes that work needs; its audit actor is actor (processor:stripe,
// system).
func System(tenantID, actor string, scopes ...string) Principal {
	return Principal{TenantID: tenantID, KeyID: systemKeyID + actor, KeyPrefix: actor, Scopes: scopes}
}

// HasScope reports whether the key carries scope.
func (p Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }

// HasFeature reports whether the tenant has feature enabled.
func (p Principal) HasFeature(feature string) bool { return slices.Contains(p.Features, feature) }

// MD returns the metadata that carries p.
func (p Principal) MD() metadata.MD {
	return metadata.Pairs(
		keyTenant, p.TenantID,
		keyKeyID, p.KeyID,
		keyPrefix, p.KeyPrefix,
		keyScopes, strings.Join(p.Scopes, ","),
		keyFeatures, strings.Join(p.Features, ","),
	)
}

// FromIncoming reads the principal of a gRPC server call. It reads the
// five keys one by one: metadata.FromIncomingContext copies the whole
// metadata map on every call, and every RPC of every service comes here.
func FromIncoming(ctx context.Context) (Principal, bool) {
	one := func(k string) string {
		v := metadata.ValueFromIncomingContext(ctx, k)
		if len(v) != 1 {
			return ""
		}
		return v[0]
	}
	p := Principal{TenantID: one(keyTenant), KeyID: one(keyKeyID), KeyPrefix: one(keyPrefix)}
	if p.TenantID == "" || p.KeyID == "" {
		return Principal{}, false
	}
	p.Scopes = splitList(one(keyScopes))
	p.Features = splitList(one(keyFeatures))
	return p, true
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Require authorizes a call on the tenant in the request path: it needs a
// principal (else 401), of that tenant (else 404, as the gateway answers),
// holding scope (else 403 naming the scope). It returns the principal.
func Require(ctx context.Context, tenantID, scope string) (Principal, error) {
	return RequireAny(ctx, tenantID, scope)
}

// RequireAny is Require for an operation that any one of several scopes
// unlocks; a 403 names the first.
func RequireAny(ctx context.Context, tenantID string, scopes ...string) (Principal, error) {
	p, ok := FromIncoming(ctx)
	if !ok {
		return Principal{}, apperr.Unauthenticated()
	}
	if !strings.EqualFold(p.TenantID, tenantID) {
		return Principal{}, apperr.NotFound("Tenant")
	}
	for _, s := range scopes {
		if p.HasScope(s) {
			return p, nil
		}
	}
	return Principal{}, apperr.MissingPermission(scopes[0])
}
