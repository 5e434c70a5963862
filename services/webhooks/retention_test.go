package webhooks

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/services/webhooks/store"
)

// TestPruneDeliveries: a dispatcher's pass deletes the finished deliveries
// queued before the retention, with their attempts, and old test sends'
// attempts, more than one batch of them; a pending delivery stays however
// old, and so does everything recent.
func TestPruneDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, Config{})
	ep := h.endpoint(t, "contact.created")
	now := time.Now()
	h.s.now = func() time.Time { return now }
	old, recent := now.Add(-91*24*time.Hour), now.Add(-89*24*time.Hour)
	delivery := func(state string, at time.Time, attempts int) uuid.UUID {
		t.Helper()
		id := uuid.Must(uuid.NewV7())
		if _, err := h.pool.Exec(ctx, `INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, enqueued_at, state, attempts)
			VALUES ($1, $2, $3, $4, 'contact.created', '{}', $5, $5, $6, $7)`, h.tenant, id, ep, uuid.Must(uuid.NewV7()), at, state, attempts); err != nil {
			t.Fatal(err)
		}
		for i := range attempts {
			if err := h.s.store.InsertAttempt(ctx, store.Attempt{TenantID: h.tenant, ID: uuid.Must(uuid.NewV7()), EndpointID: ep,
				DeliveryID: id, EventID: uuid.Must(uuid.NewV7()), Event: "contact.created", Attempt: i + 1,
				AttemptedAt: at.Add(time.Duration(i) * time.Minute), Success: state == "succeeded" && i == attempts-1}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	// 1,200 old succeeded deliveries with an attempt each, more than a
	// batch, by one statement.
	if _, err := h.pool.Exec(ctx, `
		WITH d AS (
			INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, enqueued_at, state, attempts)
			SELECT $1, gen_random_uuid(), $2, gen_random_uuid(), 'contact.created', '{}', $3, $3, 'succeeded', 1 FROM generate_series(1, 1200)
			RETURNING id, event_id)
		INSERT INTO webhooks.attempts (tenant_id, id, endpoint_id, delivery_id, event_id, event, attempt, attempted_at, success, duration_ms)
		SELECT $1, gen_random_uuid(), $2, d.id, d.event_id, 'contact.created', 1, $3, true, 5 FROM d`, h.tenant, ep, old); err != nil {
		t.Fatal(err)
	}
	abandoned := delivery("abandoned", old, 5)
	pending := delivery("pending", old, 2)
	kept := delivery("succeeded", recent, 1)
	for _, at := range []time.Time{old, recent} {
		if err := h.s.store.InsertAttempt(ctx, store.Attempt{TenantID: h.tenant, ID: uuid.Must(uuid.NewV7()), EndpointID: ep,
			EventID: uuid.Must(uuid.NewV7()), Event: "webhook.test", Attempt: 1, AttemptedAt: at, Success: true}); err != nil {
			t.Fatal(err)
		}
	}

	h.d.prune(ctx, DefaultDeliveryRetention)

	var deliveries, attempts, tests int
	if err := h.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhooks.deliveries), (SELECT count(*) FROM webhooks.attempts WHERE delivery_id IS NOT NULL),
		(SELECT count(*) FROM webhooks.attempts WHERE delivery_id IS NULL)`).Scan(&deliveries, &attempts, &tests); err != nil {
		t.Fatal(err)
	}
	if deliveries != 2 || attempts != 3 || tests != 1 {
		t.Errorf("left %d deliveries, %d of their attempts, %d test attempts; want 2 (pending, recent), 3, 1", deliveries, attempts, tests)
	}
	for _, id := range []uuid.UUID{pending, kept} {
		if _, err := h.s.store.FindDelivery(ctx, h.tenant, ep, id); err != nil {
			t.Errorf("delivery %s: %v", id, err)
		}
	}
	if _, err := h.s.store.FindDelivery(ctx, h.tenant, ep, abandoned); err == nil {
		t.Errorf("the old abandoned delivery is still there")
	}
}

func TestDeliveryRetentionSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  time.Duration
		fail  bool
	}{
		{"", DefaultDeliveryRetention, false},
		{"720h", 720 * time.Hour, false},
		{"off", config.Keep, false},
		{"1h", 0, true},
		{"ninety days", 0, true},
	} {
		cfg, err := ConfigFrom(config.Source(func(k string) string {
			switch k {
			case "ALMONER_WEBHOOK_DELIVERY_RETENTION":
				return tc.value
			case "ALMONER_WEBHOOK_SECRET_KEY":
				return "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
			}
			return ""
		}), "development")
		if tc.fail {
			if err == nil {
				t.Errorf("%q: read %s, want an error", tc.value, cfg.DeliveryRetention)
			}
			continue
		}
		if err != nil || cfg.DeliveryRetention != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.value, cfg.DeliveryRetention, err, tc.want)
		}
	}
}

// TestDeletedEndpointsQueueGoes: deleting an endpoint drops its pending
// deliveries in the same transaction and keeps the attempts made; the
// dispatcher's pass drops those of endpoints deleted before that; a live
// endpoint's pending deliveries stay.
func TestDeletedEndpointsQueueGoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, Config{})
	deleted, before, live := h.endpoint(t, "contact.created"), h.endpoint(t, "contact.created"), h.endpoint(t, "contact.created")
	pending := func(ep uuid.UUID, n int) {
		t.Helper()
		if _, err := h.pool.Exec(ctx, `INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at)
			SELECT $1, gen_random_uuid(), $2, gen_random_uuid(), 'contact.created', '{}', now() FROM generate_series(1, $3)`, h.tenant, ep, n); err != nil {
			t.Fatal(err)
		}
	}
	pending(deleted, 3)
	pending(before, 2)
	pending(live, 1)
	if err := h.s.store.InsertAttempt(ctx, store.Attempt{TenantID: h.tenant, ID: uuid.Must(uuid.NewV7()), EndpointID: deleted,
		DeliveryID: uuid.Must(uuid.NewV7()), EventID: uuid.Must(uuid.NewV7()), Event: "contact.created", Attempt: 1,
		AttemptedAt: time.Now(), Error: "HTTP 500"}); err != nil {
		t.Fatal(err)
	}
	// An endpoint deleted before deletes dropped the queue.
	if _, err := h.pool.Exec(ctx, `UPDATE webhooks.endpoints SET deleted_at = now() WHERE tenant_id = $1 AND id = $2`, h.tenant, before); err != nil {
		t.Fatal(err)
	}
	queued := func(ep uuid.UUID) (n int) {
		t.Helper()
		if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries WHERE tenant_id = $1 AND endpoint_id = $2 AND state = 'pending'`,
			h.tenant, ep).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := h.s.store.DeleteEndpoint(ctx, h.tenant, deleted, "test"); err != nil {
		t.Fatal(err)
	}
	if n := queued(deleted); n != 0 {
		t.Errorf("the deleted endpoint keeps %d pending deliveries", n)
	}
	var attempts int
	if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.attempts WHERE tenant_id = $1 AND endpoint_id = $2`, h.tenant, deleted).Scan(&attempts); err != nil || attempts != 1 {
		t.Errorf("the deleted endpoint's attempts: %d (%v), want 1", attempts, err)
	}
	h.d.prune(ctx, DefaultDeliveryRetention)
	if n, m := queued(before), queued(live); n != 0 || m != 1 {
		t.Errorf("after the pass: %d pending of the endpoint deleted before, %d of the live one; want 0 and 1", n, m)
	}
}
