package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// LiveEndpoint is what the enqueue step needs of an endpoint.
type LiveEndpoint struct {
	TenantID   uuid.UUID
	ID         uuid.UUID
	EventTypes []string
	Cursor     audit.Cursor
}

// LiveEndpoints returns every active, undeleted endpoint of every tenant.
func (s *Store) LiveEndpoints(ctx context.Context) ([]LiveEndpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, id, event_types, cursor FROM webhooks.endpoints
		WHERE active AND deleted_at IS NULL ORDER BY tenant_id, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LiveEndpoint, error) {
		var e LiveEndpoint
		var cur string
		if err := r.Scan(&e.TenantID, &e.ID, &e.EventTypes, &cur); err != nil {
			return e, err
		}
		c, err := audit.ParseCursor(cur)
		e.Cursor = c
		return e, err
	})
}

// NewDelivery is an event to queue for an endpoint.
type NewDelivery struct {
	EventID    uuid.UUID
	Event      string
	Body       []byte
	OccurredAt time.Time
	// TraceParent is the W3C traceparent of the span that wrote the audit
	// row; "" when it had none.
	TraceParent string
}

// Enqueue queues ds for the endpoint and moves its cursor from `from` to
// `next`, in one transaction. It returns false, doing nothing, when another
// dispatcher holds the endpoint or has already moved its cursor: that one
// enqueues these events. The (endpoint, event) key makes a repeated event
// a no-op in any case.
func (s *Store) Enqueue(ctx context.Context, ep LiveEndpoint, from, next audit.Cursor, ds []NewDelivery) (bool, error) {
	moved := false
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var cur string
		err := tx.QueryRow(ctx, `SELECT cursor FROM webhooks.endpoints WHERE tenant_id = $1 AND id = $2
			AND active AND deleted_at IS NULL FOR UPDATE SKIP LOCKED`, ep.TenantID, ep.ID).Scan(&cur)
		if db.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur != from.String() {
			return nil
		}
		if len(ds) > 0 {
			ids := make([]uuid.UUID, len(ds))
			eventIDs := make([]uuid.UUID, len(ds))
			names := make([]string, len(ds))
			bodies := make([][]byte, len(ds))
			times := make([]time.Time, len(ds))
			traces := make([]string, len(ds))
			for i, d := range ds {
				id, err := uuid.NewV7()
				if err != nil {
					return err
				}
				ids[i], eventIDs[i], names[i], bodies[i], times[i], traces[i] = id, d.EventID, d.Event, d.Body, d.OccurredAt, d.TraceParent
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, trace_parent)
				SELECT $1, u.id, $2, u.event_id, u.event, u.body, u.occurred_at, NULLIF(u.trace_parent, '')
				FROM unnest($3::uuid[], $4::uuid[], $5::text[], $6::bytea[], $7::timestamptz[], $8::text[])
					AS u(id, event_id, event, body, occurred_at, trace_parent)
				ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
				ep.TenantID, ep.ID, ids, eventIDs, names, bodies, times, traces); err != nil {
				return fmt.Errorf("enqueue: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE webhooks.endpoints SET cursor = $3 WHERE tenant_id = $1 AND id = $2`,
			ep.TenantID, ep.ID, next.String()); err != nil {
			return err
		}
		moved = true
		return nil
	})
	return moved, err
}

// Claimed is a delivery a dispatcher has claimed for one attempt.
type Claimed struct {
	TenantID   uuid.UUID
	ID         uuid.UUID
	EndpointID uuid.UUID
	EventID    uuid.UUID
	Event      string
	Body       []byte
	OccurredAt time.Time
	// Attempt is this attempt's number, from 1.
	Attempt   int
	URL       string
	SecretBox []byte
	// ClaimedAt is the database's time of the claim; retries are timed
	// from it.
	ClaimedAt time.Time
	// TraceParent is the originating request's W3C traceparent; "" when
	// the event was written outside a trace.
	TraceParent string
}

// Claim takes up to limit due deliveries of live endpoints for one attempt
// each. FOR UPDATE SKIP LOCKED keeps two dispatchers off the same rows;
// pushing next_attempt_at lease into the future keeps them off once this
// transaction commits, until the attempt is recorded or the lease runs out
// (the dispatcher died: the delivery is then attempted again, so delivery
// is at least once).
func (s *Store) Claim(ctx context.Context, limit int, lease time.Duration) ([]Claimed, error) {
	rows, err := s.pool.Query(ctx, `
		WITH due AS (
			SELECT d.tenant_id, d.id FROM webhooks.deliveries d
			JOIN webhooks.endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
			WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND e.active AND e.deleted_at IS NULL
			ORDER BY d.next_attempt_at
			LIMIT $1
			FOR UPDATE OF d SKIP LOCKED
		)
		UPDATE webhooks.deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $2::interval
		FROM due, webhooks.endpoints e
		WHERE d.tenant_id = due.tenant_id AND d.id = due.id AND e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
		RETURNING d.tenant_id, d.id, d.endpoint_id, d.event_id, d.event, d.body, d.occurred_at, d.attempts, e.url, e.secret_box, now(), coalesce(d.trace_parent, '')`,
		limit, lease)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Claimed, error) {
		var c Claimed
		err := r.Scan(&c.TenantID, &c.ID, &c.EndpointID, &c.EventID, &c.Event, &c.Body, &c.OccurredAt, &c.Attempt, &c.URL, &c.SecretBox, &c.ClaimedAt, &c.TraceParent)
		return c, err
	})
}

// Outcome is what happened to a claimed delivery's attempt.
type Outcome struct {
	Attempt Attempt
	// State is the delivery's next state: pending, succeeded or abandoned.
	State string
	// NextAttemptAt is when a pending delivery is due again.
	NextAttemptAt time.Time
}

// Record writes attempts and moves their deliveries on, in one
// transaction. A delivery whose attempt number has moved on (its lease ran
// out and another dispatcher claimed it) keeps the newer claim's state;
// the late attempt is still recorded, since it was sent.
func (s *Store) Record(ctx context.Context, outs []Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	n := len(outs)
	var (
		tenants, ids, endpoints, deliveries, events = make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
		names, errs, states                         = make([]string, n), make([]string, n), make([]string, n)
		attempts, codes                             = make([]int32, n), make([]int32, n)
		ats, nexts                                  = make([]time.Time, n), make([]time.Time, n)
		oks, abandoned                              = make([]bool, n), make([]bool, n)
		durs                                        = make([]int64, n)
	)
	for i, o := range outs {
		a := o.Attempt
		tenants[i], ids[i], endpoints[i], deliveries[i], events[i] = a.TenantID, a.ID, a.EndpointID, a.DeliveryID, a.EventID
		names[i], errs[i], states[i] = a.Event, a.Error, o.State
		attempts[i], codes[i] = int32(a.Attempt), int32(a.StatusCode)
		ats[i], nexts[i] = a.AttemptedAt, o.NextAttemptAt
		oks[i], abandoned[i], durs[i] = a.Success, a.Abandoned, a.Duration.Milliseconds()
	}
	return db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO webhooks.attempts (tenant_id, id, endpoint_id, delivery_id, event_id, event, attempt, attempted_at,
				success, status_code, duration_ms, error, abandoned)
			SELECT u.t, u.id, u.ep, u.d, u.ev, u.name, u.n, u.at, u.ok, NULLIF(u.code, 0), u.dur, NULLIF(u.err, ''), u.ab
			FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::int[], $8::timestamptz[],
				$9::bool[], $10::int[], $11::bigint[], $12::text[], $13::bool[])
				AS u(t, id, ep, d, ev, name, n, at, ok, code, dur, err, ab)`,
			tenants, ids, endpoints, deliveries, events, names, attempts, ats, oks, codes, durs, errs, abandoned); err != nil {
			return fmt.Errorf("record attempts: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE webhooks.deliveries d SET state = u.state, next_attempt_at = u.next
			FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::timestamptz[]) AS u(t, id, n, state, next)
			WHERE d.tenant_id = u.t AND d.id = u.id AND d.attempts = u.n AND d.state = 'pending'`,
			tenants, deliveries, attempts, states, nexts); err != nil {
			return fmt.Errorf("record deliveries: %w", err)
		}
		return nil
	})
}

// PendingCount counts deliveries not yet succeeded or abandoned.
func (s *Store) PendingCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries WHERE state = 'pending'`).Scan(&n)
	return n, err
}
