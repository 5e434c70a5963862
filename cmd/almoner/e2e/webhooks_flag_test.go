package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// TestWebhookFlagOffStopsAtOnce: once `tenant feature --set
// webhooks:enabled=false` has answered, a contact created at once is never
// delivered, however many ticks pass (the dispatcher's flag follows the
// auth service's validation epoch, not a TTL); turned on again, later
// events flow, and the one of the off period never does.
func TestWebhookFlagOffStopsAtOnce(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created")
	contact := func(name string) string {
		t.Helper()
		m := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": name, "lastName": "Donor"}).
			Expect(t, http.StatusCreated).Map(t)
		return strconv.FormatInt(int64(m["id"].(float64)), 10)
	}
	setFlag := func(on bool) {
		t.Helper()
		if _, err := c.Admin.SetTenantFeature(context.Background(), &authv1.SetTenantFeatureRequest{TenantId: tn.ID, Feature: "webhooks:enabled", Enabled: on}); err != nil {
			t.Fatal(err)
		}
	}
	entityIDs := func() []string {
		var ids []string
		for _, r := range rc.requests() {
			var b struct {
				Data struct {
					EntityID string `json:"entity_id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(r.body, &b); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, b.Data.EntityID)
		}
		return ids
	}

	first := contact("First")
	rc.waitFor(t, 1, 10*time.Second)

	setFlag(false)
	off := contact("Off")
	// Fifty ticks of 10 ms, and the dispatcher's flag cache of old (10 s)
	// would still have said "on".
	time.Sleep(500 * time.Millisecond)
	// The dispatcher reads the log only below the oldest transaction still
	// running on the server, which other tests' transactions can hold back
	// for a while: wait until it has read past the off period's event, so
	// that the flag is turned on again only after the dispatcher saw that
	// event while the flag was off (docs/webhooks.md says what an event
	// read only after the flag came back on does).
	waitCursorPast(t, c, tn.ID, off)
	if ids := entityIDs(); len(ids) != 1 || ids[0] != first {
		t.Fatalf("with the flag off: delivered %v, want only %s", ids, first)
	}

	setFlag(true)
	on := contact("On")
	rc.waitFor(t, 2, 10*time.Second)
	time.Sleep(200 * time.Millisecond) // twenty ticks more: nothing else may come
	ids := entityIDs()
	if len(ids) != 2 || ids[1] != on {
		t.Errorf("after turning the flag on: delivered %v, want %s then %s (never %s)", ids, first, on, off)
	}
}

// waitCursorPast waits until the tenant's webhook endpoint has moved its
// audit-log cursor past the contact's created event.
func waitCursorPast(t *testing.T, c *apptest.Cluster, tenantID, contactID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var past bool
		withDB(t, c, func(conn *pgx.Conn) {
			if err := conn.QueryRow(context.Background(), `SELECT coalesce((
				SELECT (split_part(ep.cursor, ':', 1)::numeric, split_part(ep.cursor, ':', 2)::bigint) >= (e.xid::text::numeric, e.id)
				FROM webhooks.endpoints ep, audit.events e
				WHERE ep.tenant_id = $1 AND ep.deleted_at IS NULL AND e.tenant_id = $1 AND e.entity_type = 'Contact' AND e.entity_id = $2
				LIMIT 1), false)`, tenantID, contactID).Scan(&past); err != nil {
				t.Fatal(err)
			}
		})
		if past {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dispatcher did not read past contact %s's event within 30 s", contactID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
