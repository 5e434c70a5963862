package auth

import (
	"context"
	"testing"

	"github.com/google/uuid"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/services/auth/keyformat"
)

// TestGetMembership: a member is answered with their status, anyone else
// (another tenant's user, an unknown or malformed id) as no member; a
// caller asserting another tenant, or nobody, learns nothing.
func TestGetMembership(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	tid, other := f.tenant(t, "members"), f.tenant(t, "strangers")
	inv, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tid, Email: "member@example.org", Role: RoleFundraiser})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: other, Email: "stranger@example.org", Role: RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	ms := &membershipServer{s: f.s}
	as := func(tenant string) context.Context {
		return authctx.NewIncomingContext(ctx, authctx.Principal{TenantID: tenant, KeyID: uuid.NewString(), KeyPrefix: "ak_test_x"})
	}
	for _, c := range []struct {
		name, user string
		member     bool
		status     string
	}{
		{"invited member", inv.GetUserId(), true, "invited"},
		{"another tenant's user", stranger.GetUserId(), false, ""},
		{"unknown", uuid.NewString(), false, ""},
		{"not an id", "me", false, ""},
	} {
		got, err := ms.GetMembership(as(tid), &authv1.GetMembershipRequest{TenantId: tid, UserId: c.user})
		if err != nil || got.GetMember() != c.member || got.GetStatus() != c.status {
			t.Errorf("%s: %v, %v; want member %v, status %q", c.name, got, err, c.member, c.status)
		}
	}
	if _, err := ms.GetMembership(as(other), &authv1.GetMembershipRequest{TenantId: tid, UserId: inv.GetUserId()}); err == nil {
		t.Error("a principal of another tenant was answered")
	} else if e, _ := apperr.As(err); e == nil || e.Kind != apperr.KindNotFound {
		t.Errorf("another tenant's principal: %v", err)
	}
	if _, err := ms.GetMembership(ctx, &authv1.GetMembershipRequest{TenantId: tid, UserId: inv.GetUserId()}); err == nil {
		t.Error("a call without a principal was answered")
	}
}
