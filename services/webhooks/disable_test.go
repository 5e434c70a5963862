package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/webhooks/store"
)

// TestAutoDisable drives the dispatcher's clock: an endpoint whose
// delivery attempts have all failed for 5 days is switched off with a
// reason and a webhook_endpoint.updated row, in one transaction; one with
// a success since its first failure, or failing for less, stays on; one
// switched back on is not judged by its old failures, and keeps its
// cursor.
func TestAutoDisable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, Config{})
	failing := h.endpoint(t, "contact.created")
	recovered := h.endpoint(t, "contact.created")
	recent := h.endpoint(t, "contact.created")
	start := time.Now()
	attempt := func(ep uuid.UUID, at time.Time, ok bool) {
		t.Helper()
		if err := h.s.store.InsertAttempt(ctx, store.Attempt{TenantID: h.tenant, ID: uuid.Must(uuid.NewV7()), EndpointID: ep,
			DeliveryID: uuid.Must(uuid.NewV7()), EventID: uuid.Must(uuid.NewV7()), Event: "contact.created", Attempt: 1,
			AttemptedAt: at, Success: ok, Error: map[bool]string{false: "HTTP 500"}[ok]}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		attempt(failing, start.Add(time.Duration(i)*time.Millisecond), false)
		attempt(recovered, start.Add(time.Duration(i)*time.Millisecond), false)
	}
	attempt(recovered, start.Add(2*24*time.Hour), true) // a success since, then failing again
	attempt(recovered, start.Add(3*24*time.Hour), false)
	attempt(recent, start.Add(24*time.Hour), false) // one day after the others began

	clock := start.Add(5*24*time.Hour + time.Minute)
	h.s.now = func() time.Time { return clock }
	before, _ := h.s.store.GetEndpoint(ctx, h.tenant, failing, false)
	cursorBefore := endpointCursor(t, h, failing)
	h.d.disableFailing(ctx)

	got, err := h.s.store.GetEndpoint(ctx, h.tenant, failing, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.Active || got.DisabledReason == nil || !strings.Contains(*got.DisabledReason, "every delivery attempt has failed since") {
		t.Fatalf("failing endpoint = active %v, reason %v", got.Active, got.DisabledReason)
	}
	for _, id := range []uuid.UUID{recovered, recent} {
		if e, _ := h.s.store.GetEndpoint(ctx, h.tenant, id, false); !e.Active || e.DisabledReason != nil {
			t.Errorf("endpoint %s switched off: %v", id, e.DisabledReason)
		}
	}
	var actor, changes string
	if err := h.pool.QueryRow(ctx, `SELECT actor, changes::text FROM audit.events WHERE tenant_id = $1 AND entity_id = $2 AND event = 'webhook_endpoint.updated'`,
		h.tenant, failing.String()).Scan(&actor, &changes); err != nil {
		t.Fatalf("no webhook_endpoint.updated row: %v", err)
	}
	if actor != "system" || !strings.Contains(changes, `"active": {"new": false, "old": true}`) || !strings.Contains(changes, `"disabledReason"`) {
		t.Errorf("audit row: %s %s", actor, changes)
	}

	time.Sleep(10 * time.Millisecond) // the failures are in the past when it is switched on
	// Switched back on: the reason goes, the cursor stays, and the old
	// failures no longer count, however far the clock moves.
	if _, err := h.s.store.UpdateEndpoint(ctx, store.Endpoint{TenantID: h.tenant, ID: failing, Name: before.Name, URL: before.URL,
		EventTypes: before.EventTypes, Active: true}, "api-key:ak_test_x", 0); err != nil {
		t.Fatal(err)
	}
	if c := endpointCursor(t, h, failing); c != cursorBefore {
		t.Errorf("cursor moved on re-enable: %s → %s", cursorBefore, c)
	}
	clock = clock.Add(10 * 24 * time.Hour)
	h.d.disableFailing(ctx)
	if e, _ := h.s.store.GetEndpoint(ctx, h.tenant, failing, false); !e.Active || e.DisabledReason != nil {
		t.Errorf("re-enabled endpoint = active %v, reason %v", e.Active, e.DisabledReason)
	}
}

func endpointCursor(t *testing.T, h *harness, id uuid.UUID) string {
	t.Helper()
	var c string
	if err := h.pool.QueryRow(context.Background(), `SELECT cursor FROM webhooks.endpoints WHERE id = $1`, id).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}
