package authctx

import (
	"context"
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
)

// TestRequireOperator: who may read and write on /api/admin.
func TestRequireOperator(t *testing.T) {
	session := func(scopes ...string) Principal { return Principal{UserID: "u", SessionID: "s", Scopes: scopes} }
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		write   bool
		wantErr string // "" allowed; else the message
	}{
		{"no principal", context.Background(), false, "Unauthorized"},
		{"support reads", NewIncomingContext(context.Background(), session(OperatorScopes(RoleSupport)...)), false, ""},
		{"support writes", NewIncomingContext(context.Background(), session(OperatorScopes(RoleSupport)...)), true, "Missing required role: platform-admin"},
		{"admin writes", NewIncomingContext(context.Background(), session(OperatorScopes(RolePlatformAdmin)...)), true, ""},
		{"member session", NewIncomingContext(context.Background(), session()), false, "Missing required role: support"},
		{"member with tenant", NewIncomingContext(context.Background(), Principal{TenantID: "t", UserID: "u", SessionID: "s",
			Scopes: []string{ScopePlatformRead}}), false, "Missing required role: support"},
	} {
		_, err := RequireOperator(tc.ctx, tc.write)
		var got string
		if e, ok := apperr.As(err); ok {
			got = e.Message
		}
		if got != tc.wantErr {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.wantErr)
		}
	}
	if OperatorScopes("owner") != nil || KnownPlatformRole("owner") || !KnownPlatformRole(RoleSupport) {
		t.Error("a tenant role is no platform role")
	}
	if !PlatformCall(NewIncomingContext(context.Background(), Principal{})) || PlatformCall(NewIncomingContext(context.Background(), session())) {
		t.Error("PlatformCall")
	}
}
