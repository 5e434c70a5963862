package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/mail/mailtest"
)

// operator invites a platform operator with the admin command, accepts
// the invitation and turns TOTP on; it returns the session cookie and the
// TOTP secret. The confirming code was of the current step: the next
// verify needs a later one.
func operator(t *testing.T, c *apptest.Cluster, email, role, pw string) (string, string) {
	t.Helper()
	cookie, secret, _ := operatorWithID(t, c, email, role, pw)
	return cookie, secret
}

// operatorWithID is operator that also returns the operator's user id.
func operatorWithID(t *testing.T, c *apptest.Cluster, email, role, pw string) (string, string, string) {
	t.Helper()
	inv, err := c.Admin.InviteOperator(context.Background(), &authv1.InviteOperatorRequest{Email: email, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	apptest.RegisterSecret(inv.GetInvitationToken())
	cookie := sessionOf(t, accept(t, c, inv.GetInvitationToken(), pw).Expect(t, http.StatusOK))
	// Before a factor, every /api/admin route is 403 Mfa.EnrollmentRequired.
	refused := asUser(t, c, "GET", "/api/admin/tenants", cookie, nil).Expect(t, http.StatusForbidden)
	if !strings.Contains(string(refused.Body), "Mfa.EnrollmentRequired") {
		t.Fatalf("before enrollment: %s", refused.Body)
	}
	enrolled := asUser(t, c, "POST", "/api/auth/mfa/totp", cookie, nil).Expect(t, http.StatusOK).Map(t)
	secret, _ := enrolled["secret"].(string)
	apptest.RegisterSecret(secret)
	asUser(t, c, "POST", "/api/auth/mfa/totp/confirm", cookie, map[string]any{"code": totpCode(t, secret, time.Now())}).Expect(t, http.StatusOK)
	return cookie, secret, inv.GetUserId()
}

// TestOperators walks the platform operators' side through the gateway, in
// one process and split: an operator invited by the admin command,
// refused on /api/admin until enrolled, asked the factor at every
// sign-in (no trusted browser); tenants listed, created, read, features
// switched (a feature turned off answers the tenant's next key request
// 401), deactivated and activated; a support operator reads but cannot
// write; a key and a member's session on /api/admin refused.
func TestOperators(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			t.Parallel()
			c := staffCluster(t, pit, split)
			tn := c.NewTenant(t)
			const pw = "basalt lantern 42 heron"
			email := staffEmail("operator")
			admin, secret := operator(t, c, email, "platform-admin", pw)
			walkOperatorSignIn(t, c, email, pw, secret)
			walkTenantAdmin(t, c, admin, tn)
			walkAdminRefusals(t, c, pit, admin, tn)
			walkImpersonation(t, c)
			walkOperations(t, c, admin, tn)
		})
	}
}

// walkOperatorSignIn: the factor at sign-in, rememberDevice ignored.
func walkOperatorSignIn(t *testing.T, c *apptest.Cluster, email, pw, secret string) {
	body, pending := signInAs(t, c, email, pw)
	if body["mfaRequired"] != true || body["platformRole"] != "platform-admin" {
		t.Fatalf("operator sign-in %v", body)
	}
	asUser(t, c, "GET", "/api/admin/tenants", pending, nil).Expect(t, http.StatusUnauthorized)
	r := asUser(t, c, "POST", "/api/auth/mfa/verify", pending, map[string]any{"method": "totp",
		"code": totpCode(t, secret, time.Now().Add(30*time.Second)), "rememberDevice": true}).Expect(t, http.StatusOK)
	for _, set := range r.Header.Values("Set-Cookie") {
		if strings.HasPrefix(set, "almoner_device=") {
			t.Errorf("an operator's browser was trusted: %s", set)
		}
	}
	asUser(t, c, "GET", "/api/admin/tenants", sessionOf(t, r), nil).Expect(t, http.StatusOK)
}

func walkTenantAdmin(t *testing.T, c *apptest.Cluster, admin string, tn apptest.Tenant) {
	slug := "op-" + uuid.NewString()[:8]
	created := asUser(t, c, "POST", "/api/admin/tenants", admin, map[string]any{"name": "Operated " + slug, "slug": slug,
		"features": []string{"api-access:enabled", "webhooks:enabled"}}).Expect(t, http.StatusCreated).Map(t)
	id, _ := created["id"].(string)
	if created["slug"] != slug || id == "" {
		t.Fatalf("created %v", created)
	}
	var page struct {
		Items      []struct{ ID, Slug string }
		TotalCount int
	}
	asUser(t, c, "GET", "/api/admin/tenants?q="+slug+"&pageSize=5", admin, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 1 || len(page.Items) != 1 || page.Items[0].ID != id {
		t.Fatalf("list q=%s: %+v", slug, page)
	}
	asUser(t, c, "GET", "/api/admin/tenants/"+id, admin, nil).Expect(t, http.StatusOK)
	asUser(t, c, "GET", "/api/admin/tenants/"+tn.ID+"x", admin, nil).Expect(t, http.StatusNotFound)
	asUser(t, c, "PUT", "/api/admin/tenants/"+tn.ID+"/features", admin, map[string]any{"features": map[string]bool{"no:such": true}}).
		Expect(t, http.StatusBadRequest)

	// A feature turned off by REST: the tenant's very next key request is 401.
	c.Do(t, "GET", tPath(tn.ID, "/api-keys"), tn.Key, nil).Expect(t, http.StatusOK)
	off := asUser(t, c, "PUT", "/api/admin/tenants/"+tn.ID+"/features", admin,
		map[string]any{"features": map[string]bool{"api-access:enabled": false}}).Expect(t, http.StatusOK).Map(t)
	if fmt.Sprint(off["features"]) != "[]" {
		t.Errorf("features after off: %v", off["features"])
	}
	c.Do(t, "GET", tPath(tn.ID, "/api-keys"), tn.Key, nil).Expect(t, http.StatusUnauthorized)
	asUser(t, c, "PUT", "/api/admin/tenants/"+tn.ID+"/features", admin,
		map[string]any{"features": map[string]bool{"api-access:enabled": true}}).Expect(t, http.StatusOK)
	c.Do(t, "GET", tPath(tn.ID, "/api-keys"), tn.Key, nil).Expect(t, http.StatusOK)

	if m := asUser(t, c, "POST", "/api/admin/tenants/"+tn.ID+"/deactivate", admin, nil).Expect(t, http.StatusOK).Map(t); m["active"] != false {
		t.Errorf("deactivated %v", m)
	}
	c.Do(t, "GET", tPath(tn.ID, "/api-keys"), tn.Key, nil).Expect(t, http.StatusUnauthorized)
	asUser(t, c, "POST", "/api/admin/tenants/"+tn.ID+"/activate", admin, nil).Expect(t, http.StatusOK)
	c.Do(t, "GET", tPath(tn.ID, "/api-keys"), tn.Key, nil).Expect(t, http.StatusOK)
	if actor := auditActor(t, c, tn.ID, "Tenant", tn.ID); !strings.HasPrefix(actor, "operator:") {
		t.Errorf("tenant change actor %q", actor)
	}
}

// walkAdminRefusals: support reads and cannot write; a key, no cookie
// and a member's session are refused.
func walkAdminRefusals(t *testing.T, c *apptest.Cluster, pit *mailtest.Server, admin string, tn apptest.Tenant) {
	support, _ := operator(t, c, staffEmail("support"), "support", "quartz meadow 19 kettle")
	asUser(t, c, "GET", "/api/admin/tenants/"+tn.ID, support, nil).Expect(t, http.StatusOK)
	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/admin/tenants", map[string]any{"name": "Nope"}},
		{"PUT", "/api/admin/tenants/" + tn.ID + "/features", map[string]any{"features": map[string]bool{"webhooks:enabled": true}}},
		{"POST", "/api/admin/tenants/" + tn.ID + "/deactivate", nil},
	} {
		r := asUser(t, c, w.method, w.path, support, w.body).Expect(t, http.StatusForbidden)
		if title := r.Map(t)["title"]; title != "Missing required role: platform-admin" {
			t.Errorf("%s %s by support: title %v", w.method, w.path, title)
		}
	}
	c.Do(t, "GET", "/api/admin/tenants", tn.Key, nil).Expect(t, http.StatusUnauthorized)
	c.Do(t, "GET", "/api/admin/tenants", "", nil).Expect(t, http.StatusUnauthorized)
	c.Do(t, "GET", "/api/admin/tenants", tn.Key, nil, "Cookie", admin).Expect(t, http.StatusUnauthorized)
	member := staffMember(t, c, tn.ID, staffEmail("member"), "owner", "cobalt harbor 88 finch")
	asUser(t, c, "GET", "/api/admin/tenants", member, nil).Expect(t, http.StatusForbidden)
	asUser(t, c, "GET", "/api/admin/nothing-here", admin, nil).Expect(t, http.StatusNotFound)
	_ = pit
}

// walkOperations reads the operations log: the tenant's creation and its
// deactivation (walkTenantAdmin), an impersonation (walkImpersonation)
// elsewhere; filters; a bad kind.
func walkOperations(t *testing.T, c *apptest.Cluster, admin string, tn apptest.Tenant) {
	var page struct {
		Items []struct{ ID, TenantID, Kind, Status, Detail string }
	}
	asUser(t, c, "GET", "/api/admin/operations?tenantId="+tn.ID+"&pageSize=100", admin, nil).Expect(t, http.StatusOK).JSON(t, &page)
	kinds := map[string]int{}
	for _, it := range page.Items {
		if it.TenantID != tn.ID {
			t.Errorf("another tenant's operation: %+v", it)
		}
		kinds[it.Kind]++
	}
	if kinds["tenant_created"] != 1 || kinds["tenant_deactivated"] != 1 {
		t.Errorf("operations of the tenant: %+v", page.Items)
	}
	asUser(t, c, "GET", "/api/admin/operations?kind=impersonation", admin, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if len(page.Items) == 0 || page.Items[0].Kind != "impersonation" {
		t.Errorf("impersonations: %+v", page.Items)
	}
	asUser(t, c, "GET", "/api/admin/operations?kind=letters", admin, nil).Expect(t, http.StatusBadRequest)
}
