package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pquerna/otp/totp"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/mail/mailtest"
)

// staffMember invites email to the tenant with role (the admin command)
// and accepts; it returns the session's Cookie header.
func staffMember(t *testing.T, c *apptest.Cluster, tenantID, email, role, password string) string {
	t.Helper()
	inv, err := c.Admin.InviteUser(context.Background(), &authv1.InviteUserRequest{TenantId: tenantID, Email: email, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	apptest.RegisterSecret(inv.GetInvitationToken())
	return sessionOf(t, accept(t, c, inv.GetInvitationToken(), password).Expect(t, http.StatusOK))
}

// cookieOf returns name=value of the cookie named name that r sets.
func cookieOf(t *testing.T, r *apptest.Response, name string) string {
	t.Helper()
	for _, set := range r.Header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(set); err == nil && c.Name == name && c.Value != "" {
			apptest.RegisterSecret(c.Value)
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no %s cookie in %v", name, r.Header.Values("Set-Cookie"))
	return ""
}

// signInAs signs in and returns the body and the session cookie.
func signInAs(t *testing.T, c *apptest.Cluster, email, password string, headers ...string) (map[string]any, string) {
	t.Helper()
	r := c.Do(t, "POST", "/api/auth/sign-in", "", map[string]any{"email": email, "password": password}, headers...).Expect(t, http.StatusOK)
	return r.Map(t), cookieOf(t, r, "almoner_session")
}

// totpCode plays the authenticator app: the code of secret at t.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCode(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// expectFlat429 checks the spec's flat 429: application/json, one
// message property, no Retry-After.
func expectFlat429(t *testing.T, r *apptest.Response) {
	t.Helper()
	r.Expect(t, http.StatusTooManyRequests)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" || r.Header.Get("Retry-After") != "" {
		t.Errorf("429 headers %v", r.Header)
	}
	if m := r.Map(t); len(m) != 1 || m["message"] == nil {
		t.Errorf("429 body %s", r.Body)
	}
}

// expectCodeError checks a 400 under Code.
func expectCodeError(t *testing.T, r *apptest.Response) {
	t.Helper()
	if errs, _ := r.Expect(t, http.StatusBadRequest).Map(t)["errors"].(map[string]any); errs["Code"] == nil {
		t.Errorf("want a 400 under Code: %s", r.Body)
	}
}

// TestStaffMfa walks each second factor through the gateway, in one
// process and split: TOTP with codes computed from the secret (the
// confirming code and a replayed one refused), a session waiting for its
// factor kept to verify and sign-out, a trusted browser, recovery codes
// once, the mfa-verify 429; email codes read from Mailpit and the
// mfa-send-email 429; the security log; a tenant with mfa:required; and
// a custom role given to a member, whose scopes are then theirs.
func TestStaffMfa(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			t.Parallel()
			c := staffCluster(t, pit, split)
			tn := c.NewTenant(t)
			t.Run("totp", func(t *testing.T) { walkTotp(t, c, tn) })
			t.Run("email", func(t *testing.T) { walkEmail(t, c, pit, tn) })
			t.Run("required", func(t *testing.T) { walkRequired(t, c) })
			t.Run("custom roles", func(t *testing.T) { walkCustomRoles(t, c, pit, tn) })
		})
	}
}

func walkTotp(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) {
	const pw = "granite orchard 71 sail"
	email := staffEmail("totp")
	full := staffMember(t, c, tn.ID, email, "fundraiser", pw)

	enrolled := asUser(t, c, "POST", "/api/auth/mfa/totp", full, nil).Expect(t, http.StatusOK).Map(t)
	secret, _ := enrolled["secret"].(string)
	if secret == "" || !strings.HasPrefix(fmt.Sprint(enrolled["otpauthUrl"]), "otpauth://totp/") {
		t.Fatalf("enrollment %v", enrolled)
	}
	apptest.RegisterSecret(secret)
	confirmCode := totpCode(t, secret, time.Now())
	var confirmed struct{ RecoveryCodes []string }
	asUser(t, c, "POST", "/api/auth/mfa/totp/confirm", full, map[string]any{"code": confirmCode}).Expect(t, http.StatusOK).JSON(t, &confirmed) // attempt 1
	if len(confirmed.RecoveryCodes) != 10 {
		t.Fatalf("recovery codes %v", confirmed.RecoveryCodes)
	}
	var users []struct {
		Email      string
		MfaEnabled bool
	}
	c.Do(t, "GET", tPath(tn.ID, "/users"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &users)
	for _, u := range users {
		if u.MfaEnabled != (u.Email == email) {
			t.Errorf("%s: mfaEnabled %v", u.Email, u.MfaEnabled)
		}
	}

	// A sign-in now waits for the factor: nothing but verify, send and
	// sign-out answers that session.
	body, pending := signInAs(t, c, email, pw)
	if body["mfaRequired"] != true || fmt.Sprint(body["mfaMethods"]) != "[totp recovery]" {
		t.Fatalf("sign-in body %v", body)
	}
	for _, path := range []string{"/api/auth/session", "/api/auth/mfa", "/api/auth/sessions", "/api/auth/security-log"} {
		asUser(t, c, "GET", path, pending, nil).Expect(t, http.StatusUnauthorized)
	}
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), pending, nil).Expect(t, http.StatusUnauthorized)

	// The confirming code was used: refused. A code of the next step
	// passes, with a new session id and a trusted-device cookie.
	verify := func(cookie, method, code string, remember bool) *apptest.Response {
		return asUser(t, c, "POST", "/api/auth/mfa/verify", cookie, map[string]any{"method": method, "code": code, "rememberDevice": remember})
	}
	expectCodeError(t, verify(pending, "totp", confirmCode, false))                                                       // attempt 2
	passed := verify(pending, "totp", totpCode(t, secret, time.Now().Add(30*time.Second)), true).Expect(t, http.StatusOK) // attempt 3
	session, device := cookieOf(t, passed, "almoner_session"), cookieOf(t, passed, "almoner_device")
	if session == pending || passed.Map(t)["mfaRequired"] != false {
		t.Fatalf("verify: session %q (was %q), body %s", session, pending, passed.Body)
	}
	asUser(t, c, "GET", "/api/auth/session", pending, nil).Expect(t, http.StatusUnauthorized)
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), session, nil).Expect(t, http.StatusOK)

	// The trusted browser signs in without the factor; another does not.
	if b, _ := signInAs(t, c, email, pw, "Cookie", device); b["mfaRequired"] != false {
		t.Errorf("trusted device sign-in %v", b)
	}
	_, pending = signInAs(t, c, email, pw)
	verify(pending, "recovery", strings.ToUpper(confirmed.RecoveryCodes[0]), false).Expect(t, http.StatusOK) // attempt 4
	_, pending = signInAs(t, c, email, pw)
	expectCodeError(t, verify(pending, "recovery", confirmed.RecoveryCodes[0], false)) // attempt 5: used
	expectFlat429(t, verify(pending, "recovery", confirmed.RecoveryCodes[1], false))   // attempt 6
	// A pending session may still sign out.
	asUser(t, c, "POST", "/api/auth/sign-out", pending, nil).Expect(t, http.StatusNoContent)

	var state struct {
		Totp              struct{ Enabled bool }
		RecoveryCodesLeft int
		TrustedDevices    int
	}
	asUser(t, c, "GET", "/api/auth/mfa", session, nil).Expect(t, http.StatusOK).JSON(t, &state)
	if !state.Totp.Enabled || state.RecoveryCodesLeft != 9 || state.TrustedDevices != 1 {
		t.Errorf("mfa state %+v", state)
	}
	var devices []map[string]any
	asUser(t, c, "GET", "/api/auth/mfa/trusted-devices", session, nil).Expect(t, http.StatusOK).JSON(t, &devices)
	if len(devices) != 1 || devices[0]["expiresAt"] == nil {
		t.Errorf("trusted devices %v", devices)
	}

	// Turning TOTP off takes the password and forgets every device.
	asUser(t, c, "DELETE", "/api/auth/mfa/totp", session, map[string]any{"password": "wrong"}).Expect(t, http.StatusBadRequest)
	asUser(t, c, "DELETE", "/api/auth/mfa/totp", session, map[string]any{"password": pw}).Expect(t, http.StatusNoContent)
	asUser(t, c, "GET", "/api/auth/mfa", session, nil).Expect(t, http.StatusOK).JSON(t, &state)
	if state.Totp.Enabled || state.RecoveryCodesLeft != 0 || state.TrustedDevices != 0 {
		t.Errorf("mfa state after turning TOTP off %+v", state)
	}
	var log []struct{ ID, Timestamp, Action, IPAddress, UserAgent string }
	asUser(t, c, "GET", "/api/auth/security-log", session, nil).Expect(t, http.StatusOK).JSON(t, &log)
	var actions []string
	for _, e := range log {
		actions = append(actions, e.Action)
	}
	want := []string{"mfa.totp.disabled", "sign_in.mfa_pending", "mfa.recovery_code.used", "sign_in.mfa_pending", "sign_in.trusted_device",
		"mfa.trusted_device.added", "sign_in.mfa_verified", "sign_in.mfa_pending", "mfa.totp.enabled", "mfa.totp.enrollment_started", "sign_in"}
	if !slices.Equal(actions, want) || log[0].IPAddress == "" || log[0].ID == "" {
		t.Errorf("security log %v, want %v (first %+v)", actions, want, log[0])
	}
}

var mfaCodeInMail = regexp.MustCompile(`code is (\d{6})`)

// mailedCode awaits the n-th email to email and returns its code.
func mailedCode(t *testing.T, pit *mailtest.Server, email string, n int) string {
	t.Helper()
	msgs := pit.Await(t, email, n) // newest first
	m := mfaCodeInMail.FindStringSubmatch(msgs[0].Text)
	if m == nil {
		t.Fatalf("the newest email has no code: %q", msgs[0].Text)
	}
	return m[1]
}

func walkEmail(t *testing.T, c *apptest.Cluster, pit *mailtest.Server, tn apptest.Tenant) {
	const pw = "copper lantern 29 moss"
	email := staffEmail("mailcode")
	full := staffMember(t, c, tn.ID, email, "viewer", pw)

	asUser(t, c, "POST", "/api/auth/mfa/email", full, nil).Expect(t, http.StatusAccepted) // send 1
	var confirmed struct{ RecoveryCodes []string }
	asUser(t, c, "POST", "/api/auth/mfa/email/confirm", full, map[string]any{"code": mailedCode(t, pit, email, 2)}).
		Expect(t, http.StatusOK).JSON(t, &confirmed) // attempt 1
	if len(confirmed.RecoveryCodes) != 10 {
		t.Fatalf("recovery codes %v", confirmed.RecoveryCodes)
	}

	// Sign-in mails nothing by itself; the pending session asks.
	body, pending := signInAs(t, c, email, pw)
	if body["mfaRequired"] != true || fmt.Sprint(body["mfaMethods"]) != "[email recovery]" {
		t.Fatalf("sign-in body %v", body)
	}
	if n := queuedFor(t, c, email); n != 2 {
		t.Errorf("%d emails after sign-in, want the invitation and the enabling code", n)
	}
	asUser(t, c, "POST", "/api/auth/mfa/email/send", pending, nil).Expect(t, http.StatusAccepted) // send 2
	code := mailedCode(t, pit, email, 3)
	wrong := fmt.Sprintf("%06d", (atoi(code)+1)%1_000_000)
	verify := func(cookie, method, code string) *apptest.Response {
		return asUser(t, c, "POST", "/api/auth/mfa/verify", cookie, map[string]any{"method": method, "code": code})
	}
	expectCodeError(t, verify(pending, "email", wrong))                                                // attempt 2
	session := cookieOf(t, verify(pending, "email", code).Expect(t, http.StatusOK), "almoner_session") // attempt 3
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), session, nil).Expect(t, http.StatusOK)

	// mfa-send-email: the enabling code and two sends, then the flat 429.
	asUser(t, c, "POST", "/api/auth/mfa/email/send", session, nil).Expect(t, http.StatusAccepted) // send 3
	expectFlat429(t, asUser(t, c, "POST", "/api/auth/mfa/email/send", session, nil))

	// New recovery codes: the old ones stop working.
	var fresh struct{ RecoveryCodes []string }
	asUser(t, c, "POST", "/api/auth/mfa/recovery-codes", session, map[string]any{"password": pw}).Expect(t, http.StatusOK).JSON(t, &fresh) // attempt 4
	if len(fresh.RecoveryCodes) != 10 || slices.Contains(fresh.RecoveryCodes, confirmed.RecoveryCodes[0]) {
		t.Fatalf("new recovery codes %v", fresh.RecoveryCodes)
	}
	_, pending = signInAs(t, c, email, pw)
	expectCodeError(t, verify(pending, "recovery", confirmed.RecoveryCodes[0])) // attempt 5
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// walkRequired: a tenant with mfa:required refuses a member's session
// without a factor on its routes (403 Mfa.EnrollmentRequired) while the
// auth routes work; once a factor is on, the routes answer.
func walkRequired(t *testing.T, c *apptest.Cluster) {
	strict := c.NewTenant(t, "mfa:required")
	full := staffMember(t, c, strict.ID, staffEmail("strict"), "viewer", "pebble thunder 88 fern")
	refused := asUser(t, c, "GET", tPath(strict.ID, "/contacts"), full, nil).Expect(t, http.StatusForbidden)
	if !strings.Contains(string(refused.Body), "Mfa.EnrollmentRequired") {
		t.Errorf("403 body %s", refused.Body)
	}
	secret, _ := asUser(t, c, "POST", "/api/auth/mfa/totp", full, nil).Expect(t, http.StatusOK).Map(t)["secret"].(string)
	apptest.RegisterSecret(secret)
	asUser(t, c, "POST", "/api/auth/mfa/totp/confirm", full, map[string]any{"code": totpCode(t, secret, time.Now())}).Expect(t, http.StatusOK)
	asUser(t, c, "GET", tPath(strict.ID, "/contacts"), full, nil).Expect(t, http.StatusOK)
}

func walkCustomRoles(t *testing.T, c *apptest.Cluster, pit *mailtest.Server, tn apptest.Tenant) {
	roles := tPath(tn.ID, "/roles")
	bad := c.Do(t, "POST", roles, tn.Key, map[string]any{"name": "auditor", "scopes": []string{"contacts:view", "contacts:fly"}}).
		Expect(t, http.StatusBadRequest).Map(t)
	if errs, _ := bad["errors"].(map[string]any); errs["Scopes[1]"] == nil {
		t.Errorf("unknown scope: %v", bad)
	}
	made := c.Do(t, "POST", roles, tn.Key, map[string]any{"name": "auditor", "scopes": []string{"reports:view", "contacts:view"}}).
		Expect(t, http.StatusCreated).Map(t)
	if made["builtIn"] != false || fmt.Sprint(made["scopes"]) != "[contacts:view reports:view]" {
		t.Errorf("created role %v", made)
	}
	c.Do(t, "POST", roles, tn.Key, map[string]any{"name": "auditor", "scopes": []string{"contacts:view"}}).Expect(t, http.StatusBadRequest)
	var list []struct {
		Name    string
		BuiltIn bool
	}
	c.Do(t, "GET", roles, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list) != 6 || list[5].Name != "auditor" || list[5].BuiltIn {
		t.Errorf("roles %+v", list)
	}
	if n := auditRows(t, c, tn.ID, "Role"); n != 1 {
		t.Errorf("%d audit rows of roles, want 1", n)
	}

	// A member with the role holds its scopes, and no others.
	email := staffEmail("auditor")
	c.Do(t, "POST", tPath(tn.ID, "/users"), tn.Key, map[string]any{"email": email, "role": "auditor"}).Expect(t, http.StatusCreated)
	session := sessionOf(t, accept(t, c, invitationToken(t, pit, email), "silver kettle 54 dune").Expect(t, http.StatusOK))
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), session, nil).Expect(t, http.StatusOK)
	denied := asUser(t, c, "POST", tPath(tn.ID, "/contacts"), session, janeBody()).Expect(t, http.StatusForbidden).Map(t)
	if denied["title"] != "Missing required permission: contacts:create" {
		t.Errorf("403 title %v", denied["title"])
	}
	c.Do(t, "POST", tPath(tn.ID, "/users"), tn.Key, map[string]any{"email": staffEmail("ghost"), "role": "ghost"}).Expect(t, http.StatusBadRequest)
}

// auditRows counts a tenant's audit rows of an entity type.
func auditRows(t *testing.T, c *apptest.Cluster, tenantID, entityType string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_type = $2`,
		tenantID, entityType).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
