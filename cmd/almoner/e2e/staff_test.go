package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/mail/mailtest"
)

// staffPublicURL is the cluster's ALMONER_PUBLIC_URL: https, so session
// cookies are Secure.
const staffPublicURL = "https://donors.example.org"

// staffCluster starts a cluster that sends mail to Mailpit at once and
// hashes passwords cheaply (the production costs are in docs/auth.md).
func staffCluster(t *testing.T, pit *mailtest.Server, split bool) *apptest.Cluster {
	return apptest.Start(t, apptest.Options{Split: split, Settings: map[string]string{
		"ALMONER_SMTP_URL": pit.SMTPURL, "ALMONER_MAIL_INTERVAL": "20ms", "ALMONER_PUBLIC_URL": staffPublicURL,
		"ALMONER_ARGON2_MEMORY_KIB": "64", "ALMONER_ARGON2_TIME": "1", "ALMONER_IMPERSONATION_SWEEP": "100ms",
	}})
}

// staffEmail is an address no other test uses (they share one Mailpit).
func staffEmail(who string) string { return who + "-" + uuid.NewString()[:8] + "@example.org" }

var tokenInLink = regexp.MustCompile(regexp.QuoteMeta(staffPublicURL+"/accept-invitation?token=") + `([A-Za-z0-9_-]+)`)

// invitationToken reads the invitation emailed to email from Mailpit and
// returns the token of its link.
func invitationToken(t *testing.T, pit *mailtest.Server, email string) string {
	t.Helper()
	msgs := pit.Await(t, email, 1)
	m := tokenInLink.FindStringSubmatch(msgs[0].Text)
	if m == nil {
		t.Fatalf("the invitation's plain text has no link to %s: %q", staffPublicURL, msgs[0].Text)
	}
	apptest.RegisterSecret(m[1])
	return m[1]
}

// sessionOf returns the Cookie header of the session a response set,
// checking the cookie's attributes.
func sessionOf(t *testing.T, r *apptest.Response) string {
	t.Helper()
	set := r.Header.Get("Set-Cookie")
	for _, attr := range []string{"almoner_session=", "Path=/", "HttpOnly", "SameSite=Lax", "Secure"} {
		if !strings.Contains(set, attr) {
			t.Fatalf("Set-Cookie %q lacks %s", set, attr)
		}
	}
	c, err := http.ParseSetCookie(set)
	if err != nil || c.Value == "" {
		t.Fatalf("Set-Cookie %q: %v", set, err)
	}
	apptest.RegisterSecret(c.Value)
	return c.Name + "=" + c.Value
}

// asUser sends a request with a session cookie (and no key), from the
// server's own origin as a browser would.
func asUser(t *testing.T, c *apptest.Cluster, method, path, cookie string, body any, headers ...string) *apptest.Response {
	t.Helper()
	return c.Do(t, method, path, "", body, append([]string{"Cookie", cookie}, headers...)...)
}

func accept(t *testing.T, c *apptest.Cluster, token, password string) *apptest.Response {
	t.Helper()
	return c.Do(t, "POST", "/api/auth/invitations/accept", "", map[string]any{
		"token": token, "password": password, "firstName": "Ada", "lastName": "Lovelace"})
}

// TestStaffInvitationToSession: an operator invites a tenant's first owner
// (the email reaches a real SMTP server with its link), the owner accepts
// and works with a session cookie; the owner invites a viewer, who gets
// the viewer's scopes (403 on a write) and the 404 of another tenant;
// the last owner cannot leave; removing the viewer ends their access on
// the next request; sign-out ends the session; in one process and split.
func TestStaffInvitationToSession(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			t.Parallel()
			c := staffCluster(t, pit, split)
			tn := c.NewTenant(t)
			other := c.NewTenant(t)
			ctx := context.Background()

			ownerEmail := staffEmail("owner")
			inv, err := c.Admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tn.ID, Email: ownerEmail, Role: "owner"})
			if err != nil {
				t.Fatal(err)
			}
			apptest.RegisterSecret(inv.GetInvitationToken())
			if got := invitationToken(t, pit, ownerEmail); got != inv.GetInvitationToken() {
				t.Fatalf("emailed token %q, admin command printed %q", got, inv.GetInvitationToken())
			}
			weak := accept(t, c, inv.GetInvitationToken(), "password1234").Expect(t, http.StatusBadRequest).Map(t)
			if errs, _ := weak["errors"].(map[string]any); errs["Password"] == nil {
				t.Errorf("a common password: %v", weak)
			}
			const ownerPassword = "violet hangar 42 tundra"
			accepted := accept(t, c, inv.GetInvitationToken(), ownerPassword).Expect(t, http.StatusOK)
			owner := sessionOf(t, accepted)
			body := accepted.Map(t)
			ms, _ := body["memberships"].([]any)
			if u, _ := body["user"].(map[string]any); u["id"] != inv.GetUserId() || body["mfaRequired"] != false || len(ms) != 1 {
				t.Fatalf("accept body %v", body)
			}
			accept(t, c, inv.GetInvitationToken(), ownerPassword).Expect(t, http.StatusBadRequest)

			// The owner makes an API key with the session; it names them.
			made := asUser(t, c, "POST", keysPath(tn.ID), owner, map[string]any{"name": "from a browser", "scopes": []string{"contacts:view"}}).Expect(t, http.StatusCreated).Map(t)
			apptest.RegisterSecret(made["plainTextKey"].(string))
			if got := auditActor(t, c, tn.ID, "ApiKey", made["id"].(string)); got != "user:"+inv.GetUserId() {
				t.Errorf("audit actor of a key made with a session %q", got)
			}

			// The owner invites a viewer with the session alone.
			viewerEmail := staffEmail("viewer")
			users := tPath(tn.ID, "/users")
			created := asUser(t, c, "POST", users, owner, map[string]any{"email": viewerEmail, "role": "viewer"}).Expect(t, http.StatusCreated).Map(t)
			if created["status"] != "invited" || created["role"] != "viewer" {
				t.Errorf("invited user %v", created)
			}
			viewerID := created["id"].(string)
			if got := auditActor(t, c, tn.ID, "User", viewerID); got != "user:"+inv.GetUserId() {
				t.Errorf("audit actor of the invitation %q, want user:%s", got, inv.GetUserId())
			}
			viewer := sessionOf(t, accept(t, c, invitationToken(t, pit, viewerEmail), "quiet meadow lantern 7").Expect(t, http.StatusOK))

			// The viewer reads, may not write, and has no other tenant.
			asUser(t, c, "GET", tPath(tn.ID, "/contacts"), viewer, nil).Expect(t, http.StatusOK)
			denied := asUser(t, c, "POST", tPath(tn.ID, "/contacts"), viewer, janeBody()).Expect(t, http.StatusForbidden).Map(t)
			if denied["title"] != "Missing required permission: contacts:create" {
				t.Errorf("403 title %v", denied["title"])
			}
			asUser(t, c, "GET", tPath(other.ID, "/contacts"), viewer, nil).Expect(t, http.StatusNotFound)
			asUser(t, c, "GET", tPath(tn.ID, "/roles"), viewer, nil).Expect(t, http.StatusForbidden)
			var roles []struct {
				Name    string
				Scopes  []string
				BuiltIn bool
			}
			asUser(t, c, "GET", tPath(tn.ID, "/roles"), owner, nil).Expect(t, http.StatusOK).JSON(t, &roles)
			if len(roles) != 5 || roles[0].Name != "owner" || roles[4].Name != "viewer" || !roles[4].BuiltIn {
				t.Errorf("roles %+v", roles)
			}
			for _, s := range roles[4].Scopes {
				if !strings.HasSuffix(s, ":view") {
					t.Errorf("the viewer holds %s", s)
				}
			}

			// The last owner may neither step down nor leave.
			for _, r := range []*apptest.Response{
				asUser(t, c, "PUT", users+"/"+inv.GetUserId(), owner, map[string]any{"role": "admin"}),
				asUser(t, c, "DELETE", users+"/"+inv.GetUserId(), owner, nil),
			} {
				errs, _ := r.Expect(t, http.StatusBadRequest).Map(t)["errors"].(map[string]any)
				if msgs, _ := errs[""].([]any); len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]), "User.LastOwner") {
					t.Errorf("last owner: %s", r.Body)
				}
			}

			// A new role applies from the next request.
			asUser(t, c, "PUT", users+"/"+viewerID, owner, map[string]any{"role": "fundraiser"}).Expect(t, http.StatusOK)
			asUser(t, c, "POST", tPath(tn.ID, "/contacts"), viewer, janeBody()).Expect(t, http.StatusCreated)

			// Removing the member ends their access on the next request.
			asUser(t, c, "DELETE", users+"/"+viewerID, owner, nil).Expect(t, http.StatusNoContent)
			asUser(t, c, "GET", tPath(tn.ID, "/contacts"), viewer, nil).Expect(t, http.StatusNotFound)
			list := asUser(t, c, "GET", users, owner, nil).Expect(t, http.StatusOK)
			if !strings.Contains(string(list.Body), `"status":"deactivated"`) {
				t.Errorf("users after removal: %s", list.Body)
			}

			// Sign-out ends the session on the next request.
			asUser(t, c, "POST", "/api/auth/sign-out", owner, nil).Expect(t, http.StatusNoContent)
			asUser(t, c, "GET", "/api/auth/session", owner, nil).Expect(t, http.StatusUnauthorized)
			asUser(t, c, "GET", tPath(tn.ID, "/contacts"), owner, nil).Expect(t, http.StatusUnauthorized)
		})
	}
}

// auditActor is the actor of an entity's latest audit row.
func auditActor(t *testing.T, c *apptest.Cluster, tenantID, entityType, entityID string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var actor string
	err = conn.QueryRow(context.Background(), `SELECT actor FROM audit.events WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3
		ORDER BY id DESC LIMIT 1`, tenantID, entityType, entityID).Scan(&actor)
	if err != nil {
		t.Fatal(err)
	}
	return actor
}

// TestStaffSignInRefusals: a wrong password, an unknown email and a user
// whose last membership ended get the same 401; an API key never
// authenticates /api/auth; a cross-site cookie request is 403; the
// eleventh failed sign-in of an email in 15 minutes is the spec's flat
// 429. Sessions, sign-in and listing sessions work.
func TestStaffSignInRefusals(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	c := staffCluster(t, pit, false)
	tn := c.NewTenant(t)
	ctx := context.Background()
	signIn := func(email, pw string, headers ...string) *apptest.Response {
		return c.Do(t, "POST", "/api/auth/sign-in", "", map[string]any{"email": email, "password": pw}, headers...)
	}
	const pw = "amber falcon quietly 9"
	member, gone := staffEmail("member"), staffEmail("gone")
	ids := map[string]string{}
	for _, email := range []string{member, gone} {
		inv, err := c.Admin.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: tn.ID, Email: email, Role: "fundraiser"})
		if err != nil {
			t.Fatal(err)
		}
		apptest.RegisterSecret(inv.GetInvitationToken())
		accept(t, c, inv.GetInvitationToken(), pw).Expect(t, http.StatusOK)
		ids[email] = inv.GetUserId()
	}
	c.Do(t, "DELETE", tPath(tn.ID, "/users/"+ids[gone]), tn.Key, nil).Expect(t, http.StatusNoContent)

	// The email is matched without case; each sign-in is a new session
	// (besides the one accepting the invitation started).
	s1 := sessionOf(t, signIn(strings.ToUpper(member), pw).Expect(t, http.StatusOK))
	s2 := sessionOf(t, signIn(member, pw).Expect(t, http.StatusOK))
	if s1 == s2 {
		t.Error("two sign-ins share a session id")
	}
	var sessions []map[string]any
	asUser(t, c, "GET", "/api/auth/sessions", s2, nil).Expect(t, http.StatusOK).JSON(t, &sessions)
	if len(sessions) != 3 || sessions[0]["current"] != true || sessions[1]["current"] != false {
		t.Errorf("sessions %v", sessions)
	}
	asUser(t, c, "DELETE", "/api/auth/sessions/"+sessions[1]["id"].(string), s2, nil).Expect(t, http.StatusNoContent)
	asUser(t, c, "GET", "/api/auth/session", s1, nil).Expect(t, http.StatusUnauthorized)

	// One 401 for every cause.
	wrong := signIn(member, pw+"x").Expect(t, http.StatusUnauthorized)
	for name, r := range map[string]*apptest.Response{
		"unknown email":   signIn(staffEmail("nobody"), pw),
		"no membership":   signIn(gone, pw),
		"empty password":  signIn(member, ""),
		"key on sign-in":  c.Do(t, "POST", "/api/auth/sign-in", tn.Key, map[string]any{"email": member, "password": pw}),
		"key on session":  c.Do(t, "GET", "/api/auth/session", tn.Key, nil),
		"key and cookie":  c.Do(t, "GET", "/api/auth/session", tn.Key, nil, "Cookie", s2),
		"no cookie":       c.Do(t, "GET", "/api/auth/session", "", nil),
		"unknown session": asUser(t, c, "GET", "/api/auth/session", "almoner_session=nope", nil),
	} {
		if r.Status != http.StatusUnauthorized || stripTrace(r.Body) != stripTrace(wrong.Body) || r.Header.Get("Content-Type") != wrong.Header.Get("Content-Type") {
			t.Errorf("%s: %d %s; want the wrong password's %d %s", name, r.Status, r.Body, wrong.Status, wrong.Body)
		}
	}

	// A cookie request a browser marks cross-site changes nothing.
	asUser(t, c, "POST", tPath(tn.ID, "/contacts"), s2, janeBody(), "Sec-Fetch-Site", "cross-site").Expect(t, http.StatusForbidden)
	asUser(t, c, "POST", tPath(tn.ID, "/contacts"), s2, janeBody(), "Origin", "https://evil.example").Expect(t, http.StatusForbidden)
	asUser(t, c, "POST", "/api/auth/sign-out", s2, nil, "Sec-Fetch-Site", "cross-site").Expect(t, http.StatusForbidden)
	asUser(t, c, "GET", "/api/auth/session", s2, nil).Expect(t, http.StatusOK)
	made := asUser(t, c, "POST", tPath(tn.ID, "/contacts"), s2, janeBody(), "Sec-Fetch-Site", "same-origin").Expect(t, http.StatusCreated).Map(t)
	if got := auditActor(t, c, tn.ID, "Contact", fmt.Sprint(made["id"])); got != "user:"+ids[member] {
		t.Errorf("a contact made with a session: actor %q, want user:%s", got, ids[member])
	}

	// Failed sign-ins: 10 per email per 15 minutes, then the flat 429,
	// even with the right password.
	for range 8 { // two failed above already: the wrong and the empty password
		signIn(member, "wrong wrong wrong").Expect(t, http.StatusUnauthorized)
	}
	limited := signIn(member, pw).Expect(t, http.StatusTooManyRequests)
	if ct := limited.Header.Get("Content-Type"); ct != "application/json" || limited.Header.Get("Retry-After") != "" {
		t.Errorf("429 headers %v", limited.Header)
	}
	if m := limited.Map(t); len(m) != 1 || m["message"] == nil {
		t.Errorf("429 body %s", limited.Body)
	}
	signIn(staffEmail("other"), pw).Expect(t, http.StatusUnauthorized)
}

// stripTrace drops a problem document's traceId, the one part that
// differs between two identical failures.
func stripTrace(b []byte) string {
	return regexp.MustCompile(`"traceId":"[^"]*"`).ReplaceAllString(string(b), "")
}

var resetLink = regexp.MustCompile(regexp.QuoteMeta(staffPublicURL+"/reset-password?token=") + `([A-Za-z0-9_-]+)`)

// TestStaffPasswordReset: a reset is 202 whether or not the email is a
// user's, mails only a user a one-use link, and setting the new password
// ends every session; the old password stops working.
func TestStaffPasswordReset(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	c := staffCluster(t, pit, false)
	tn := c.NewTenant(t)
	email := staffEmail("forgetful")
	inv, err := c.Admin.InviteUser(context.Background(), &authv1.InviteUserRequest{TenantId: tn.ID, Email: email, Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	apptest.RegisterSecret(inv.GetInvitationToken())
	const oldPassword, newPassword = "first ember canyon 3", "second willow harbor 8"
	session := sessionOf(t, accept(t, c, inv.GetInvitationToken(), oldPassword).Expect(t, http.StatusOK))

	nobody := staffEmail("nobody")
	for _, e := range []string{nobody, strings.ToUpper(email)} {
		r := c.Do(t, "POST", "/api/auth/password-reset", "", map[string]any{"email": e}).Expect(t, http.StatusAccepted)
		if string(r.Body) != "{}" {
			t.Errorf("202 body %s", r.Body)
		}
	}
	if n := queuedFor(t, c, nobody); n != 0 {
		t.Errorf("%d emails queued for an unknown address", n)
	}
	var m []string
	for _, msg := range pit.Await(t, email, 2) { // the invitation and the reset
		if found := resetLink.FindStringSubmatch(msg.Text); found != nil {
			m = found
		}
	}
	if m == nil {
		t.Fatalf("no email to %s has a reset link", email)
	}
	apptest.RegisterSecret(m[1])
	confirm := func(pw string) *apptest.Response {
		return c.Do(t, "POST", "/api/auth/password-reset/confirm", "", map[string]any{"token": m[1], "password": pw})
	}
	confirm(email).Expect(t, http.StatusBadRequest)
	asUser(t, c, "GET", "/api/auth/session", session, nil).Expect(t, http.StatusOK)
	confirm(newPassword).Expect(t, http.StatusNoContent)
	asUser(t, c, "GET", "/api/auth/session", session, nil).Expect(t, http.StatusUnauthorized)
	confirm("third maple lagoon 5").Expect(t, http.StatusBadRequest)
	signIn := func(pw string) *apptest.Response {
		return c.Do(t, "POST", "/api/auth/sign-in", "", map[string]any{"email": email, "password": pw})
	}
	signIn(oldPassword).Expect(t, http.StatusUnauthorized)
	sessionOf(t, signIn(newPassword).Expect(t, http.StatusOK))
}

// queuedFor counts the messages queued for an address.
func queuedFor(t *testing.T, c *apptest.Cluster, to string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM mail.outbox WHERE lower(to_address) = lower($1)`, to).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
