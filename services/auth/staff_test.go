package auth

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/services/auth/keyformat"
)

// headerStream is the server transport stream a gRPC server gives a
// handler, so that grpc.SetHeader works when handlers are called
// directly.
type headerStream struct{ md metadata.MD }

func (h *headerStream) Method() string                  { return "test" }
func (h *headerStream) SetHeader(md metadata.MD) error  { h.md = metadata.Join(h.md, md); return nil }
func (h *headerStream) SendHeader(md metadata.MD) error { return h.SetHeader(md) }
func (h *headerStream) SetTrailer(metadata.MD) error    { return nil }

// acceptInvite invites email to tenant as an operator and accepts it; it
// returns the session token from the cookie set.
func acceptInvite(t *testing.T, f *fixture, tenant, email string) string {
	t.Helper()
	ctx := context.Background()
	inv, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tenant, Email: email, Role: RoleOwner})
	if err != nil {
		t.Fatal(err)
	}
	hs := &headerStream{}
	_, err = (&staffServer{s: f.s}).AcceptInvitation(grpc.NewContextWithServerTransportStream(ctx, hs), &authv1.AcceptInvitationRequest{
		Token: inv.GetInvitationToken(), Password: "seven lanterns drift", FirstName: "A", LastName: "B"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := http.ParseSetCookie(hs.md.Get("set-cookie")[0])
	if err != nil {
		t.Fatal(err)
	}
	return c.Value
}

// TestSessionTimeouts: a session ends after its idle timeout, and after
// its absolute lifetime however often it is used.
func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	tid := f.tenant(t, "timeouts")
	token := acceptInvite(t, f, tid, "idle@example.org")
	start := time.Now()
	at := func(d time.Duration) error {
		f.s.now = func() time.Time { return start.Add(d) }
		_, err := f.s.openSession(ctx, token)
		return err
	}
	// Used every 11 hours, the session outlives its idle timeout…
	for _, d := range []time.Duration{time.Minute, 11 * time.Hour, 22 * time.Hour, 33 * time.Hour} {
		if err := at(d); err != nil {
			t.Fatalf("after %v: %v", d, err)
		}
		if _, err := f.pool.Exec(ctx, `UPDATE auth.sessions SET last_seen_at = $1`, start.Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	// …but not 12 hours unused, nor past 7 days.
	wantKind(t, "12 h idle", at(45*time.Hour), apperr.KindUnauthenticated)
	if _, err := f.pool.Exec(ctx, `UPDATE auth.sessions SET last_seen_at = $1`, start.Add(7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "past 7 days", at(7*24*time.Hour+time.Minute), apperr.KindUnauthenticated)
}

// TestInvitationRules: an invitation expires after 7 days; an active
// member cannot be invited again; a removed one can, and their older
// invitation no longer works.
func TestInvitationRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	tid := f.tenant(t, "invitations")
	staff := &staffServer{s: f.s}
	accept := func(token string) error {
		_, err := staff.AcceptInvitation(grpc.NewContextWithServerTransportStream(ctx, &headerStream{}), &authv1.AcceptInvitationRequest{
			Token: token, Password: "seven lanterns drift", FirstName: "A", LastName: "B"})
		return err
	}
	inv, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tid, Email: "late@example.org", Role: RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	var left time.Duration
	if err := f.pool.QueryRow(ctx, `SELECT expires_at - now() FROM auth.invitations`).Scan(&left); err != nil || left < 7*24*time.Hour-time.Minute || left > 7*24*time.Hour {
		t.Fatalf("invitation valid for %v (%v), want 7 days", left, err)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE auth.invitations SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if e := kindOf(t, "expired", accept(inv.GetInvitationToken()), apperr.KindInvalid); e.Violations[0].Field != "Token" {
		t.Errorf("expired invitation: %v", e.Violations)
	}

	owner := authctx.NewIncomingContext(ctx, authctx.Principal{TenantID: tid, KeyID: uuid.NewString(), KeyPrefix: "ak_test_x", Scopes: roleScopes[RoleOwner]})
	users := &userServer{s: f.s}
	again, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tid, Email: "LATE@example.org", Role: RoleViewer})
	if err == nil {
		t.Fatalf("an invited member was invited again: %v", again)
	}
	if e := kindOf(t, "invited twice", err, apperr.KindInvalid); e.Code != codeAlreadyMember || e.Violations[0].Field != "Email" {
		t.Errorf("invited twice: %+v", e)
	}
	if _, err := users.DeleteUser(owner, &authv1.DeleteUserRequest{TenantId: tid, UserId: inv.GetUserId()}); err != nil {
		t.Fatal(err)
	}
	first, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tid, Email: "late@example.org", Role: RoleViewer})
	if err != nil || first.GetUserId() != inv.GetUserId() {
		t.Fatalf("re-invite after removal: %v, %v (same user %s)", first, err, inv.GetUserId())
	}
	second, err := f.admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tid, Email: "other@example.org", Role: RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users.DeleteUser(owner, &authv1.DeleteUserRequest{TenantId: tid, UserId: second.GetUserId()}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, "the invitation of a removed member", accept(second.GetInvitationToken()), apperr.KindInvalid)
	if err := accept(first.GetInvitationToken()); err != nil {
		t.Errorf("the new invitation: %v", err)
	}
	// Only owners:manage makes an owner.
	admin := authctx.NewIncomingContext(ctx, authctx.Principal{TenantID: tid, KeyID: uuid.NewString(), KeyPrefix: "ak_test_y", Scopes: roleScopes[RoleAdmin]})
	_, err = users.UpdateUser(admin, &authv1.UpdateUserRequest{TenantId: tid, UserId: first.GetUserId(), Role: RoleOwner})
	wantKind(t, "an admin makes an owner", err, apperr.KindPermissionDenied)
}
