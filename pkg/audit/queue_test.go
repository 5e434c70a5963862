package audit

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"
)

// TestQueueWritesLikeRecord: rows queued in one batch are stored as Record
// stores them (event name, changes, span context) and in queue order.
func TestQueueWritesLikeRecord(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := SpanContext(tp)
	if !ok {
		t.Fatal("fixture traceparent does not parse")
	}
	traced := trace.ContextWithSpanContext(ctx, sc)
	b := &pgx.Batch{}
	entries := []Entry{
		{TenantID: tenant, EntityType: "Order", EntityID: "first", Action: Created, Actor: "system"},
		{TenantID: tenant, EntityType: "OrderPayment", EntityID: "second", Action: Updated, Actor: "system",
			Changes: map[string]Change{"status": {Old: "Captured", New: "Refunded"}}},
	}
	for _, e := range entries {
		if err := Queue(traced, b, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := Queue(ctx, b, Entry{TenantID: tenant, EntityType: "Order", EntityID: "x", Action: "Renamed", Actor: "system"}); err == nil {
		t.Fatal("an unknown action was queued")
	}
	tx := begin(t, pool)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	events, _ := readWant(t, pool, ReadQuery{TenantID: tenant}, 2)
	want := []struct{ id, event, changes string }{
		{"first", "order.created", ""},
		{"second", "order_payment.updated", `{"status": {"new": "Refunded", "old": "Captured"}}`},
	}
	for i, w := range want {
		e := events[i]
		if e.EntityID != w.id || e.Event != w.event || string(e.Changes) != w.changes || e.TraceParent != tp {
			t.Errorf("event %d = %s %s %s %q, want %s %s %s %q", i, e.EntityID, e.Event, e.Changes, e.TraceParent, w.id, w.event, w.changes, tp)
		}
	}
}

// TestQueueAllWritesLikeRecord: QueueAll stores what Queue stores, in slice
// order, in one statement; entries of two tenants are refused.
func TestQueueAllWritesLikeRecord(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	tenant := uuid.NewString()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, _ := SpanContext(tp)
	traced := trace.ContextWithSpanContext(ctx, sc)
	entries := []Entry{
		{TenantID: tenant, EntityType: "Order", EntityID: "first", Action: Created, Actor: "api-key:x"},
		{TenantID: tenant, EntityType: "OrderPayment", EntityID: "second", Action: Updated, Actor: "api-key:x",
			Changes: map[string]Change{"status": {Old: "Captured", New: "Refunded"}}},
		{TenantID: tenant, EntityType: "OrderDonation", EntityID: "third", Action: Deleted, Actor: "api-key:x"},
	}
	b := &pgx.Batch{}
	if err := QueueAll(traced, b, entries); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 1 {
		t.Fatalf("%d statements queued, want 1", b.Len())
	}
	bad := append([]Entry{}, entries...)
	bad[1].TenantID = uuid.NewString()
	if err := QueueAll(ctx, &pgx.Batch{}, bad); err == nil {
		t.Error("entries of two tenants were queued together")
	}
	if err := QueueAll(ctx, &pgx.Batch{}, []Entry{{TenantID: tenant, EntityType: "Order", EntityID: "x", Action: "Renamed", Actor: "a"}}); err == nil {
		t.Error("an unknown action was queued")
	}
	tx := begin(t, pool)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	events, _ := readWant(t, pool, ReadQuery{TenantID: tenant}, 3)
	want := []struct{ id, event, changes string }{
		{"first", "order.created", ""},
		{"second", "order_payment.updated", `{"status": {"new": "Refunded", "old": "Captured"}}`},
		{"third", "order_donation.deleted", ""},
	}
	for i, w := range want {
		e := events[i]
		if e.EntityID != w.id || e.Event != w.event || string(e.Changes) != w.changes || e.TraceParent != tp || e.Actor != "api-key:x" {
			t.Errorf("event %d = %s %s %s %q %s, want %s %s %s %q", i, e.EntityID, e.Event, e.Changes, e.TraceParent, e.Actor, w.id, w.event, w.changes, tp)
		}
		if i > 0 && e.Seq <= events[i-1].Seq {
			t.Errorf("event %d numbered %d after %d", i, e.Seq, events[i-1].Seq)
		}
	}
}
