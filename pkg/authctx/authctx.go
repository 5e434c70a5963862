// Package authctx carries the authenticated caller from the gateway to the
// services, and checks it in the services.
//
// The gateway validates X-Api-Key with the auth service and sends the
// principal with each call as a signed assertion (assertion.go): the
// tenant, the key, its scopes and the tenant's features, with a short
// expiry and the method it is for, under an HMAC-SHA256 of the
// deployment's internal key (ALMONER_INTERNAL_KEY). Every service's gRPC
// server verifies it once per call (grpc.go) before any handler runs, and
// FromIncoming, Require and RequireAny read only what was verified, never
// raw metadata: a caller that reaches a service's port without the key can
// assert nothing. Services still check the scope each RPC needs.
//
// Calls without a principal (key validation, the admin commands, work the
// platform does without a tenant) carry a signed service assertion, so an
// unsigned call is refused on every method but health checks.
package authctx

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
)

// SystemActor is the audit actor of work the platform does by itself
// (recurring charges, the dispatcher).
const SystemActor = "system"

// Principal is an authenticated caller: an API key, or a staff user's
// session (UserID and SessionID set, KeyID empty) whose scopes are its
// role's in TenantID.
type Principal struct {
	TenantID  string
	KeyID     string
	KeyPrefix string
	// UserID is the signed-in user of a session principal.
	UserID string
	// SessionID is the session a user principal came from: set on
	// /api/auth routes (sign-out, the session's own reads) and on tenant
	// routes alike.
	SessionID string
	// Impersonator is the operator's user id while an operator works as
	// UserID through an impersonation (docs/operators.md), whose id is
	// Impersonation; both empty otherwise.
	Impersonator  string
	Impersonation string
	Scopes        []string
	Features      []string
	// Currency is the tenant's default ISO 4217 currency, as the auth
	// service answered the key's validation: what money given without a
	// currency is in. A System principal carries none.
	Currency string
	// tenantUUID is TenantID parsed once, where a verified assertion is read
	// (Key.Verify, System); Tenant parses a principal built otherwise.
	tenantUUID uuid.UUID
}

// Tenant returns the tenant id as a UUID: the value parsed when the
// principal was verified, else TenantID parsed now. A tenant id that is
// not a UUID is uuid.Nil, which matches no tenant's rows.
func (p Principal) Tenant() uuid.UUID {
	if p.tenantUUID != uuid.Nil {
		return p.tenantUUID
	}
	return parseTenant(p.TenantID)
}

// parseTenant is uuid.Nil for an id that is not a UUID.
func parseTenant(id string) uuid.UUID {
	u, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil
	}
	return u
}

// DefaultCurrency returns the tenant's default currency the principal
// carries, for money given without one. A principal without it (a System
// principal, or an asserting process that did not know it) is a 503 the
// client can answer by naming the currency: guessing one would record the
// gift in the wrong money.
func (p Principal) DefaultCurrency() (string, error) {
	if p.Currency == "" {
		return "", apperr.Unavailable("The tenant's default currency is not known; name the currency.",
			errors.New("the principal carries no default currency"))
	}
	return p.Currency, nil
}

// Actor is the audit-log actor of the principal: api-key:<keyPrefix>,
// user:<userId> for a session, or the platform's own actor for a System
// principal.
func (p Principal) Actor() string {
	if p.UserID != "" {
		return "user:" + p.UserID
	}
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
// system). The process doing the work signs it, as it signs every call.
func System(tenantID, actor string, scopes ...string) Principal {
	return Principal{TenantID: tenantID, tenantUUID: parseTenant(tenantID), KeyID: systemKeyID + actor, KeyPrefix: actor, Scopes: scopes}
}

// HasScope reports whether the key carries scope.
func (p Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }

// HasFeature reports whether the tenant has feature enabled.
func (p Principal) HasFeature(feature string) bool { return slices.Contains(p.Features, feature) }

// tenant reports whether p names a tenant's key: a service assertion names
// none.
func (p Principal) tenant() bool { return p.TenantID != "" && (p.KeyID != "" || p.UserID != "") }

// FromSession returns the verified session principal of a call on the
// /api/auth routes: a signed-in user, with or without a tenant. False for
// anything else (an API key, a service assertion, no principal).
func FromSession(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(incomingKey{}).(Principal)
	if !ok || p.UserID == "" || p.SessionID == "" {
		return Principal{}, false
	}
	return p, true
}

type incomingKey struct{}

type outgoingKey struct{}

// NewIncomingContext returns ctx as the server interceptor leaves it once
// it has verified an assertion of p: for handlers called in process, as
// tests call them. Nothing that arrives over the network comes here
// unverified.
func NewIncomingContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, incomingKey{}, p)
}

// FromIncoming returns the verified principal of a gRPC server call; false
// when the call carries none (a service assertion, or a handler called
// without the interceptor).
func FromIncoming(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(incomingKey{}).(Principal)
	if !ok || !p.tenant() {
		return Principal{}, false
	}
	return p, true
}

// NewOutgoingContext returns ctx whose gRPC calls assert p: the connection's
// signing interceptor (Key.DialOptions) signs p for each call made with it.
// Calls made without it assert the calling service only, no tenant.
func NewOutgoingContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, outgoingKey{}, p)
}

// outgoing returns the principal NewOutgoingContext put in ctx.
func outgoing(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(outgoingKey{}).(Principal)
	return p, ok
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
