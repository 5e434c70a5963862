package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// walkImpersonation (TestOperators): refused without a grant; the owner
// grants support access; a support operator starts an impersonation of
// the owner and works as them (header on every answer): a read, a contact
// created whose event carries impersonator_id, a refund and a key refused
// with nothing changed; one at a time; the tenant lists it; it ends at
// expiry (ended by the sweeper, unasked) and on the grant's withdrawal
// (the next request 401), each end an impersonation.deleted event.
func walkImpersonation(t *testing.T, c *apptest.Cluster) {
	f := newOrderFixture(t, c)
	tn := f.tn
	ownerEmail := staffEmail("granting-owner")
	owner := staffMember(t, c, tn.ID, ownerEmail, "owner", "walnut signal 64 ember")
	ownerID := userIDOf(t, c, tn, ownerEmail)
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(25)).Expect(t, http.StatusCreated).Map(t)
	orderPath := tPath(tn.ID, "/orders/", order["id"].(string))
	opEmail := staffEmail("support-imp")
	op, _, opID := operatorWithID(t, c, opEmail, "support", "copper willow 27 drum")
	start := map[string]any{"tenantId": tn.ID, "userId": ownerID, "reason": "Ticket 4711: receipts look wrong", "minutes": 5}

	r := asUser(t, c, "POST", "/api/admin/impersonations", op, start).Expect(t, http.StatusForbidden)
	if !strings.Contains(string(r.Body), "Impersonation.NotGranted") {
		t.Fatalf("without a grant: %s", r.Body)
	}
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), op, nil).Expect(t, http.StatusUnauthorized)
	asUser(t, c, "PUT", tPath(tn.ID, "/support-access"), owner, map[string]any{"until": time.Now().Add(31 * 24 * time.Hour)}).
		Expect(t, http.StatusBadRequest)
	asUser(t, c, "PUT", tPath(tn.ID, "/support-access"), owner, map[string]any{"until": time.Now().Add(24 * time.Hour)}).Expect(t, http.StatusOK)

	imp := asUser(t, c, "POST", "/api/admin/impersonations", op, start).Expect(t, http.StatusCreated).Map(t)
	impID, _ := imp["id"].(string)
	if imp["operatorId"] != opID || imp["userId"] != ownerID || impID == "" {
		t.Fatalf("impersonation %v", imp)
	}
	asUser(t, c, "POST", "/api/admin/impersonations", op, start).Expect(t, http.StatusBadRequest)
	asUser(t, c, "GET", "/api/admin/impersonations/current", op, nil).Expect(t, http.StatusOK)

	read := asUser(t, c, "GET", orderPath, op, nil).Expect(t, http.StatusOK)
	if read.Header.Get("X-Almoner-Impersonation") != impID {
		t.Errorf("X-Almoner-Impersonation %q", read.Header.Get("X-Almoner-Impersonation"))
	}
	asUser(t, c, "POST", tPath(tn.ID, "/contacts"), op, map[string]any{"contactType": "Individual", "firstName": "Imp", "lastName": "Ersonated"}).
		Expect(t, http.StatusCreated).Map(t)
	for _, refused := range []struct {
		method, path string
		body         any
	}{
		{"POST", orderPath + "/refunds", map[string]any{"amount": 5}},
		{"POST", tPath(tn.ID, "/api-keys"), map[string]any{"name": "x", "scopes": []string{"contacts:view"}}},
		{"DELETE", tPath(tn.ID, "/support-access"), nil},
	} {
		r := asUser(t, c, refused.method, refused.path, op, refused.body).Expect(t, http.StatusForbidden)
		if title := r.Map(t)["title"]; title != "Refused during impersonation" {
			t.Errorf("%s %s: title %v", refused.method, refused.path, title)
		}
	}
	if after := c.Do(t, "GET", orderPath, tn.Key, nil).Expect(t, http.StatusOK); string(after.Body) != string(read.Body) {
		t.Errorf("the refused refund changed the order:\n%s\n%s", read.Body, after.Body)
	}
	// The feed serves these rows (data.impersonator_id, data.entity_id),
	// but only once every older transaction on the server has ended, other
	// tests' too: the rows are read here (services/webhooks
	// TestEventBodyImpersonator renders them).
	if got := impersonatedRows(t, c, tn.ID); got != "contact.created by operator:"+opID {
		t.Errorf("rows written while impersonating: %q", got)
	}
	if n := eventCount(t, c, tn.ID, "impersonation.created"); n != 1 {
		t.Errorf("%d impersonation.created events", n)
	}
	walkAuditLog(t, c, tn, owner, "operator:"+opID, "user:"+ownerID)

	walkImpersonationEnds(t, c, impersonationCase{tn: tn, owner: owner, op: op, opEmail: opEmail, impID: impID, start: start})
}

// impersonationCase is what walkImpersonation hands walkImpersonationEnds.
type impersonationCase struct {
	tn                        apptest.Tenant
	owner, op, opEmail, impID string
	start                     map[string]any
}

// walkImpersonationEnds: the ends of an impersonation, each the very next
// request 401 and an impersonation.deleted event: at expiry, on the
// grant's withdrawal, on the operator's deactivation.
func walkImpersonationEnds(t *testing.T, c *apptest.Cluster, ic impersonationCase) {
	tn, owner, op, opEmail, impID, start := ic.tn, ic.owner, ic.op, ic.opEmail, ic.impID, ic.start
	// Expiry, on a short clock: the row's end is moved to the past (and the
	// epoch, as any change does). The sweeper ends it and writes its event
	// with no request by the operator; the very next request is 401.
	expire(t, c, impID)
	awaitEventCount(t, c, tn.ID, "impersonation.deleted", 1)
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), op, nil).Expect(t, http.StatusUnauthorized)
	asUser(t, c, "GET", "/api/admin/impersonations/current", op, nil).Expect(t, http.StatusNotFound)

	// The grant's withdrawal ends the next one.
	imp2 := asUser(t, c, "POST", "/api/admin/impersonations", op, start).Expect(t, http.StatusCreated).Map(t)
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), op, nil).Expect(t, http.StatusOK)
	asUser(t, c, "DELETE", tPath(tn.ID, "/support-access"), owner, nil).Expect(t, http.StatusNoContent)
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), op, nil).Expect(t, http.StatusUnauthorized)

	var list struct {
		Items []struct{ ID, OperatorEmail, Reason, EndReason string }
	}
	asUser(t, c, "GET", tPath(tn.ID, "/impersonations"), owner, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list.Items) != 2 || list.Items[0].ID != imp2["id"] || list.Items[0].EndReason != "grant_withdrawn" || list.Items[1].EndReason != "expired" ||
		!strings.HasPrefix(list.Items[0].OperatorEmail, "support-imp-") {
		t.Errorf("impersonations %+v", list.Items)
	}
	// The operator's deactivation ends the next one and their session.
	asUser(t, c, "PUT", tPath(tn.ID, "/support-access"), owner, map[string]any{"until": time.Now().Add(time.Hour)}).Expect(t, http.StatusOK)
	asUser(t, c, "POST", "/api/admin/impersonations", op, start).Expect(t, http.StatusCreated)
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), op, nil).Expect(t, http.StatusOK)
	if _, err := c.Admin.DeactivateOperator(context.Background(), &authv1.DeactivateOperatorRequest{Email: opEmail}); err != nil {
		t.Fatal(err)
	}
	asUser(t, c, "GET", tPath(tn.ID, "/contacts"), op, nil).Expect(t, http.StatusUnauthorized)
	asUser(t, c, "GET", "/api/admin/tenants", op, nil).Expect(t, http.StatusUnauthorized)

	// The feed reads below the server's oldest running transaction (other
	// tests' too): the rows themselves, which it serves, are read here.
	if n := eventCount(t, c, tn.ID, "impersonation.deleted"); n != 3 {
		t.Errorf("%d impersonation.deleted events, want 3", n)
	}
}

// auditPage is a page of the audit log.
type auditPage struct {
	Items []struct {
		ID, EntityType, EntityID, Action, Actor string
		ImpersonatorID                          *string
	}
	NextCursor string
	HasMore    bool
}

// walkAuditLog reads the tenant's audit log: the impersonator filter, an
// entity filter that never shows another tenant's rows, cursor pages,
// refusals.
func walkAuditLog(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, owner, impersonator, actor string) {
	var p auditPage
	asUser(t, c, "GET", tPath(tn.ID, "/audit-logs?impersonatorId="+impersonator), owner, nil).Expect(t, http.StatusOK).JSON(t, &p)
	if len(p.Items) != 1 || p.Items[0].EntityType != "Contact" || p.Items[0].Action != "Created" || p.Items[0].Actor != actor ||
		p.Items[0].ImpersonatorID == nil || *p.Items[0].ImpersonatorID != impersonator {
		t.Errorf("impersonated rows %+v", p.Items)
	}
	c.Do(t, "GET", tPath(tn.ID, "/audit-logs?entityType=Tenant"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
	if len(p.Items) == 0 {
		t.Error("no Tenant rows")
	}
	for _, it := range p.Items {
		if it.EntityID != tn.ID {
			t.Errorf("another tenant's row: %+v", it)
		}
	}
	var first, second auditPage
	c.Do(t, "GET", tPath(tn.ID, "/audit-logs?limit=2&action=Created&to="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), tn.Key, nil).
		Expect(t, http.StatusOK).JSON(t, &first)
	c.Do(t, "GET", tPath(tn.ID, "/audit-logs?limit=2&action=Created&after="+first.NextCursor), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &second)
	if !first.HasMore || len(first.Items) != 2 || len(second.Items) != 2 || first.Items[1].ID == second.Items[0].ID {
		t.Errorf("pages %+v then %+v", first, second)
	}
	for _, bad := range []string{"?action=Exploded", "?limit=1001", "?after=nope", "?entityId=1", "?from=yesterday"} {
		c.Do(t, "GET", tPath(tn.ID, "/audit-logs"+bad), tn.Key, nil).Expect(t, http.StatusBadRequest)
	}
}

// userIDOf finds a member's id by email.
func userIDOf(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, email string) string {
	t.Helper()
	var users []struct{ ID, Email string }
	c.Do(t, "GET", tPath(tn.ID, "/users"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &users)
	for _, u := range users {
		if u.Email == email {
			return u.ID
		}
	}
	t.Fatalf("no member %s", email)
	return ""
}

// eventCount counts the tenant's audit rows of an event.
func eventCount(t *testing.T, c *apptest.Cluster, tenantID, event string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND event = $2`, tenantID, event).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// awaitEventCount waits until the tenant has want audit rows of event
// (the impersonation sweeper runs every 100 ms in staffCluster).
func awaitEventCount(t *testing.T, c *apptest.Cluster, tenantID, event string, want int) {
	t.Helper()
	n := eventCount(t, c, tenantID, event)
	for deadline := time.Now().Add(30 * time.Second); n != want && time.Now().Before(deadline); n = eventCount(t, c, tenantID, event) {
		time.Sleep(50 * time.Millisecond)
	}
	if n != want {
		t.Fatalf("%d %s events, want %d", n, event, want)
	}
}

// impersonatedRows lists the tenant's audit rows that name an
// impersonator, as "event by impersonator".
func impersonatedRows(t *testing.T, c *apptest.Cluster, tenantID string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var out string
	if err := conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(event || ' by ' || impersonator, ', '), '')
		FROM audit.events WHERE tenant_id = $1 AND impersonator IS NOT NULL`, tenantID).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// expire moves the impersonation's end to the past and the validation
// epoch on, then waits out the cache window (500 ms): what a clock moved
// past expiresAt would do, without waiting a minute.
func expire(t *testing.T, c *apptest.Cluster, id string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE auth.impersonations SET expires_at = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE auth.validation_epoch SET epoch = epoch + 1`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
}
