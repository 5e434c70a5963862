package authctx

import (
	"context"

	"github.com/almoner/almoner/pkg/apperr"
)

// Platform operators (docs/operators.md) are users with a platform role
// and no tenant: the gateway resolves their session on /api/admin routes
// into a principal without a tenant whose scopes are the role's, so the
// assertion's format does not change.

// The platform roles.
const (
	RoleSupport       = "support"
	RolePlatformAdmin = "platform-admin"
)

// The scopes an operator principal carries: every operator reads, a
// platform-admin writes too. They are not in the tenant scope catalog.
const (
	ScopePlatformRead  = "platform:read"
	ScopePlatformWrite = "platform:write"
)

// OperatorScopes are the scopes of a platform role; nil for another role.
func OperatorScopes(role string) []string {
	switch role {
	case RoleSupport:
		return []string{ScopePlatformRead}
	case RolePlatformAdmin:
		return []string{ScopePlatformRead, ScopePlatformWrite}
	}
	return nil
}

// KnownPlatformRole reports whether role is a platform role.
func KnownPlatformRole(role string) bool { return OperatorScopes(role) != nil }

// OperatorActor is the audit actor of an operator's own action.
func OperatorActor(userID string) string { return "operator:" + userID }

// RequireOperator authorizes a call made by an operator's session: 401
// without a session principal, 403 for a session that is no operator's,
// and for a write (write true) 403 naming the platform-admin role the
// caller lacks.
func RequireOperator(ctx context.Context, write bool) (Principal, error) {
	p, ok := FromSession(ctx)
	if !ok {
		return Principal{}, apperr.Unauthenticated()
	}
	if p.TenantID != "" || !p.HasScope(ScopePlatformRead) {
		return Principal{}, apperr.Forbidden("Missing required role: " + RoleSupport)
	}
	if write && !p.HasScope(ScopePlatformWrite) {
		return Principal{}, apperr.Forbidden("Missing required role: " + RolePlatformAdmin)
	}
	return p, nil
}

// PlatformCall reports whether the call carries the platform's own
// assertion (the admin command, a service's own work): neither a tenant
// principal nor a session. A served call always carries a verified
// assertion (the server interceptor refuses one without); a context
// without any is a handler called in process, by a test.
func PlatformCall(ctx context.Context) bool {
	p, ok := ctx.Value(incomingKey{}).(Principal)
	return !ok || p.TenantID == "" && p.KeyID == "" && p.UserID == "" && p.SessionID == ""
}
