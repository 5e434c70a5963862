package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// The kinds of delivery (webhooks.deliveries.kind).
const (
	// KindEvent is the dispatcher's first delivery of an event, queued
	// from the endpoint's cursor; at most one per (endpoint, event).
	KindEvent = "event"
	// KindRedelivery sends a delivery's event again (RedeliveryOf).
	KindRedelivery = "redelivery"
	// KindReplay is one event of a replayed window.
	KindReplay = "replay"
)

// Delivery is one queued send of an event to an endpoint.
type Delivery struct {
	TenantID   uuid.UUID
	ID         uuid.UUID
	EndpointID uuid.UUID
	EventID    uuid.UUID
	Event      string
	// State is pending, succeeded or abandoned.
	State         string
	Kind          string
	RedeliveryOf  *uuid.UUID
	EnqueuedAt    time.Time
	NextAttemptAt time.Time
}

const deliveryColumns = `d.tenant_id, d.id, d.endpoint_id, d.event_id, d.event, d.state, d.kind, d.redelivery_of, d.enqueued_at, d.next_attempt_at`

func scanDelivery(r pgx.Row) (Delivery, error) {
	var d Delivery
	if err := r.Scan(&d.TenantID, &d.ID, &d.EndpointID, &d.EventID, &d.Event, &d.State, &d.Kind, &d.RedeliveryOf, &d.EnqueuedAt, &d.NextAttemptAt); err != nil {
		return Delivery{}, fmt.Errorf("read delivery: %w", db.Interpret(err))
	}
	return d, nil
}

// FindDelivery reads an endpoint's delivery by its id or by the id of one
// of its attempts (what the deliveries list shows as `id`); db.ErrNotFound
// when the tenant's endpoint has none such (a test event's attempt has no
// delivery).
func (s *Store) FindDelivery(ctx context.Context, tenantID, endpointID, id uuid.UUID) (Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `
		SELECT `+deliveryColumns+` FROM webhooks.deliveries d
		WHERE d.tenant_id = $1 AND d.endpoint_id = $2 AND d.id = coalesce(
			(SELECT a.delivery_id FROM webhooks.attempts a WHERE a.tenant_id = $1 AND a.endpoint_id = $2 AND a.id = $3), $3)`,
		tenantID, endpointID, id))
	if err != nil {
		return Delivery{}, fmt.Errorf("webhooks: find delivery %s: %w", id, err)
	}
	return d, nil
}

// DeliveryAttempts returns a delivery's attempts, oldest first.
func (s *Store) DeliveryAttempts(ctx context.Context, tenantID, deliveryID uuid.UUID) ([]Attempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+attemptColumns+` FROM webhooks.attempts
		WHERE tenant_id = $1 AND delivery_id = $2 ORDER BY attempt, attempted_at, id`, tenantID, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("webhooks: attempts of delivery %s: %w", deliveryID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) { return scanAttempt(r) })
	if err != nil {
		return nil, fmt.Errorf("webhooks: attempts of delivery %s: %w", deliveryID, err)
	}
	return out, nil
}

// Redeliver queues a delivery's event again for its endpoint as a new
// delivery: a new id, the same event and body (the signature and
// timestamp are made at each send), due now, with the normal retries. With
// limit > 0 it is refused (*BacklogError) when the tenant already has
// limit replayed or redelivered deliveries pending.
func (s *Store) Redeliver(ctx context.Context, tenantID, deliveryID uuid.UUID, limit int) (Delivery, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Delivery{}, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	var d Delivery
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkBacklog(ctx, tx, tenantID, 1, limit); err != nil {
			return err
		}
		d, err = scanDelivery(tx.QueryRow(ctx, `
			WITH d AS (
				INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, trace_parent, kind, redelivery_of)
				SELECT o.tenant_id, $3, o.endpoint_id, o.event_id, o.event, o.body, o.occurred_at, o.trace_parent, 'redelivery', o.id
				FROM webhooks.deliveries o WHERE o.tenant_id = $1 AND o.id = $2
				RETURNING *
			)
			SELECT `+deliveryColumns+` FROM d`, tenantID, deliveryID, id))
		return err
	})
	if err != nil {
		return Delivery{}, fmt.Errorf("webhooks: redeliver %s: %w", deliveryID, err)
	}
	return d, nil
}

// EnqueueReplay queues ds for a live endpoint of the tenant as replay
// deliveries, due in slice order (a microsecond apart, so claims take them
// in the order given); it returns how many it queued (none when the
// endpoint is deleted). With limit > 0 it queues nothing (*BacklogError)
// when the tenant's pending replayed and redelivered deliveries and ds
// would be more than limit.
func (s *Store) EnqueueReplay(ctx context.Context, tenantID, endpointID uuid.UUID, ds []NewDelivery, limit int) (int, error) {
	n := len(ds)
	ids, eventIDs, names, bodies := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]string, n), make([][]byte, n)
	times, traces := make([]time.Time, n), make([]string, n)
	for i, d := range ds {
		id, err := uuid.NewV7()
		if err != nil {
			return 0, fmt.Errorf("webhooks: replay: %w", err)
		}
		ids[i], eventIDs[i], names[i], bodies[i], times[i], traces[i] = id, d.EventID, d.Event, d.Body, d.OccurredAt, d.TraceParent
	}
	var queued int
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkBacklog(ctx, tx, tenantID, n, limit); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, replayInsert, tenantID, endpointID, ids, eventIDs, names, bodies, times, traces)
		queued = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("webhooks: replay to %s: %w", endpointID, err)
	}
	return queued, nil
}

// replayInsert queues replay deliveries for a live endpoint, in the
// order of the arrays.
const replayInsert = `
		INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, trace_parent, kind, next_attempt_at)
		SELECT ep.tenant_id, u.id, ep.id, u.event_id, u.event, u.body, u.occurred_at, NULLIF(u.trace_parent, ''), 'replay',
			now() + u.ord * interval '1 microsecond'
		FROM webhooks.endpoints ep,
			unnest($3::uuid[], $4::uuid[], $5::text[], $6::bytea[], $7::timestamptz[], $8::text[]) WITH ORDINALITY
				AS u(id, event_id, event, body, occurred_at, trace_parent, ord)
		WHERE ep.tenant_id = $1 AND ep.id = $2 AND ep.deleted_at IS NULL
		ORDER BY u.ord`
