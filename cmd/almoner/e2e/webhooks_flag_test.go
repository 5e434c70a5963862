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

// flagCase is a tenant with webhooks:enabled, a receiver subscribed to
// contact.created, and the steps the flag tests take.
type flagCase struct {
	c  *apptest.Cluster
	tn apptest.Tenant
	rc *receiver
}

func newFlagCase(t *testing.T) *flagCase {
	t.Helper()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created")
	return &flagCase{c: c, tn: tn, rc: rc}
}

// contact creates a contact and returns its id.
func (f *flagCase) contact(t *testing.T, name string) string {
	t.Helper()
	m := f.c.Do(t, "POST", tPath(f.tn.ID, "/contacts"), f.tn.Key, map[string]any{"contactType": "Individual", "firstName": name, "lastName": "Donor"}).
		Expect(t, http.StatusCreated).Map(t)
	return strconv.FormatInt(int64(m["id"].(float64)), 10)
}

// setFlag turns webhooks:enabled as an operator does; it returns once the
// change is answered.
func (f *flagCase) setFlag(t *testing.T, on bool) {
	t.Helper()
	if _, err := f.c.Admin.SetTenantFeature(context.Background(), &authv1.SetTenantFeatureRequest{TenantId: f.tn.ID, Feature: "webhooks:enabled", Enabled: on}); err != nil {
		t.Fatal(err)
	}
}

// delivered lists the entity ids of the contacts delivered so far.
func (f *flagCase) delivered(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, r := range f.rc.requests() {
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

// TestWebhookFlagOffStopsAtOnce: once `tenant feature --set
// webhooks:enabled=false` has answered, a contact created at once is never
// delivered, however many ticks pass (the dispatcher's flag follows the
// auth service's validation epoch, not a TTL); turned on again, later
// events flow, and the one of the off period never does.
func TestWebhookFlagOffStopsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFlagCase(t)
	first := f.contact(t, "First")
	f.rc.waitFor(t, 1)

	f.setFlag(t, false)
	off := f.contact(t, "Off")
	// Fifty ticks of 10 ms, and the dispatcher's flag cache of old (10 s)
	// would still have said "on".
	time.Sleep(500 * time.Millisecond)
	// Here the flag is turned on only after the dispatcher has read the
	// off period's event (other tests' transactions can hold the audit
	// horizon back for a while); TestWebhookFlagOffBehindTheHorizon is the
	// case where it reads it only after.
	waitCursorPast(t, f.c, f.tn.ID, off)
	if ids := f.delivered(t); len(ids) != 1 || ids[0] != first {
		t.Fatalf("with the flag off: delivered %v, want only %s", ids, first)
	}

	f.setFlag(t, true)
	on := f.contact(t, "On")
	f.rc.waitFor(t, 2)
	time.Sleep(200 * time.Millisecond) // twenty ticks more: nothing else may come
	if ids := f.delivered(t); len(ids) != 2 || ids[1] != on {
		t.Errorf("after turning the flag on: delivered %v, want %s then %s (never %s)", ids, first, on, off)
	}
}

// TestWebhookFlagOffBehindTheHorizon: a transaction held open on the
// database for the whole off period keeps the dispatcher from reading the
// off period's event until after the flag is on again; it is still never
// delivered (the auth service's events_since, docs/webhooks.md).
func TestWebhookFlagOffBehindTheHorizon(t *testing.T) {
	t.Parallel()
	f := newFlagCase(t)
	ctx := context.Background()
	first := f.contact(t, "First")
	f.rc.waitFor(t, 1)

	conn, err := pgx.Connect(ctx, f.c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	held, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	f.setFlag(t, false)
	off := f.contact(t, "Off")
	time.Sleep(300 * time.Millisecond)
	f.setFlag(t, true)
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	on := f.contact(t, "On")
	waitCursorPast(t, f.c, f.tn.ID, on) // the dispatcher has now read both
	f.rc.waitFor(t, 2)
	time.Sleep(200 * time.Millisecond)
	if ids := f.delivered(t); len(ids) != 2 || ids[0] != first || ids[1] != on {
		t.Errorf("delivered %v, want %s then %s (never %s, committed while the flag was off)", ids, first, on, off)
	}
}

// waitCursorPast waits until the tenant's webhook endpoint has moved its
// audit-log cursor past the contact's created event.
func waitCursorPast(t *testing.T, c *apptest.Cluster, tenantID, contactID string) {
	t.Helper()
	deadline := time.Now().Add(deliveryWait)
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
			t.Fatalf("the dispatcher did not read past contact %s's event within %s", contactID, deliveryWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
