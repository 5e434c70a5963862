package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
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
		return nil, fmt.Errorf("webhooks: list live endpoints: %w", err)
	}
	live, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LiveEndpoint, error) {
		var e LiveEndpoint
		var cur string
		if err := r.Scan(&e.TenantID, &e.ID, &e.EventTypes, &cur); err != nil {
			return e, err
		}
		c, err := audit.ParseCursor(cur)
		e.Cursor = c
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: list live endpoints: %w", err)
	}
	return live, nil
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
// `next`, atomically. It returns false, doing nothing, when another
// dispatcher holds the endpoint or has already moved its cursor: that one
// enqueues these events. The (endpoint, event) key makes a repeated event
// a no-op in any case.
//
// It is one statement, so one round trip and a transaction no longer than
// the statement: the audit reader waits for every transaction older than
// the events it reads, this one included.
func (s *Store) Enqueue(ctx context.Context, ep LiveEndpoint, from, next audit.Cursor, ds []NewDelivery) (bool, error) {
	ids := make([]uuid.UUID, len(ds))
	eventIDs := make([]uuid.UUID, len(ds))
	names := make([]string, len(ds))
	bodies := make([][]byte, len(ds))
	times := make([]time.Time, len(ds))
	traces := make([]string, len(ds))
	for i, d := range ds {
		id, err := uuid.NewV7()
		if err != nil {
			return false, fmt.Errorf("webhooks: enqueue: %w", err)
		}
		ids[i], eventIDs[i], names[i], bodies[i], times[i], traces[i] = id, d.EventID, d.Event, d.Body, d.OccurredAt, d.TraceParent
	}
	// The lock's WHERE holds the cursor check: a row whose cursor another
	// dispatcher moved after this statement's snapshot is re-checked on its
	// newest version (and left out), one that is locked is skipped. The
	// insert and the update only act when the lock was taken.
	var moved bool
	err := s.pool.QueryRow(ctx, `
		WITH ep AS MATERIALIZED (
			SELECT tenant_id, id FROM webhooks.endpoints
			WHERE tenant_id = $1 AND id = $2 AND active AND deleted_at IS NULL AND cursor = $3
			FOR UPDATE SKIP LOCKED
		), queued AS (
			INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, trace_parent)
			SELECT ep.tenant_id, u.id, ep.id, u.event_id, u.event, u.body, u.occurred_at, NULLIF(u.trace_parent, '')
			FROM ep, unnest($5::uuid[], $6::uuid[], $7::text[], $8::bytea[], $9::timestamptz[], $10::text[])
				AS u(id, event_id, event, body, occurred_at, trace_parent)
			ON CONFLICT (endpoint_id, event_id) WHERE kind = 'event' DO NOTHING
		), moved AS (
			UPDATE webhooks.endpoints e SET cursor = $4 FROM ep
			WHERE e.tenant_id = ep.tenant_id AND e.id = ep.id
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM moved)`,
		ep.TenantID, ep.ID, from.String(), next.String(), ids, eventIDs, names, bodies, times, traces).Scan(&moved)
	if err != nil {
		return false, fmt.Errorf("webhooks: enqueue: %w", err)
	}
	return moved, nil
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
	// ClaimedAt is the database's time of the claim: retries are timed in
	// the database's clock, from it plus however long the attempt waited
	// to begin (Dispatcher.attempt).
	ClaimedAt time.Time
	// Asked is this process's time just before the claim was sent, so
	// that how long after it an attempt began can be added to ClaimedAt.
	// The store leaves it zero; the caller sets it.
	Asked time.Time
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
//
// The endpoint check is a correlated subquery on purpose: as a join, the
// planner read every due delivery, hashed it against the endpoints and
// sorted the lot before taking `limit` (30-50 ms per claim with 20,000 due,
// growing with the backlog); as a filter on the deliveries_due index scan
// it reads rows in next_attempt_at order and stops after `limit`.
//
// It is planned for its arguments on every call (QueryExecModeExec, an
// unnamed statement) rather than prepared once: PostgreSQL's generic plan
// of a cached statement cannot see how small `limit` is and joined the
// claimed rows back to a sequential scan of the whole queue, which made
// claims in BenchmarkDispatcher average 20 ms and reach 5 s.
func (s *Store) Claim(ctx context.Context, limit int, lease time.Duration) ([]Claimed, error) {
	rows, err := s.pool.Query(ctx, `
		WITH due AS (
			SELECT d.tenant_id, d.id FROM webhooks.deliveries d
			WHERE d.state = 'pending' AND d.next_attempt_at <= now()
				AND (SELECT e.active AND e.deleted_at IS NULL FROM webhooks.endpoints e
					WHERE e.tenant_id = d.tenant_id AND e.id = d.endpoint_id)
			ORDER BY d.next_attempt_at
			LIMIT $1
			FOR UPDATE OF d SKIP LOCKED
		)
		UPDATE webhooks.deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $2::bigint * interval '1 millisecond'
		FROM due, webhooks.endpoints e
		WHERE d.tenant_id = due.tenant_id AND d.id = due.id AND e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
		RETURNING d.tenant_id, d.id, d.endpoint_id, d.event_id, d.event, d.body, d.occurred_at, d.attempts, e.url, e.secret_box, now(), coalesce(d.trace_parent, '')`,
		pgx.QueryExecModeExec, int64(limit), lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim deliveries: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Claimed, error) {
		var c Claimed
		err := r.Scan(&c.TenantID, &c.ID, &c.EndpointID, &c.EventID, &c.Event, &c.Body, &c.OccurredAt, &c.Attempt, &c.URL, &c.SecretBox, &c.ClaimedAt, &c.TraceParent)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: claim deliveries: %w", err)
	}
	return claimed, nil
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
	// One statement (one round trip, the shortest transaction): the audit
	// reader waits for every transaction older than the events it reads.
	// Both parts run whether or not the outer query reads them.
	if _, err := s.pool.Exec(ctx, `
		WITH recorded AS (
			INSERT INTO webhooks.attempts (tenant_id, id, endpoint_id, delivery_id, event_id, event, attempt, attempted_at,
				success, status_code, duration_ms, error, abandoned)
			SELECT u.t, u.id, u.ep, u.d, u.ev, u.name, u.n, u.at, u.ok, NULLIF(u.code, 0), u.dur, NULLIF(u.err, ''), u.ab
			FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::int[], $8::timestamptz[],
				$9::bool[], $10::int[], $11::bigint[], $12::text[], $13::bool[])
				AS u(t, id, ep, d, ev, name, n, at, ok, code, dur, err, ab)
		)
		UPDATE webhooks.deliveries d SET state = u.state, next_attempt_at = u.next
		FROM unnest($1::uuid[], $4::uuid[], $7::int[], $14::text[], $15::timestamptz[]) AS u(t, id, n, state, next)
		WHERE d.tenant_id = u.t AND d.id = u.id AND d.attempts = u.n AND d.state = 'pending'`,
		tenants, ids, endpoints, deliveries, events, names, attempts, ats, oks, codes, durs, errs, abandoned, states, nexts); err != nil {
		return fmt.Errorf("webhooks: record attempts: %w", err)
	}
	return nil
}

// PendingCount counts deliveries not yet succeeded or abandoned.
func (s *Store) PendingCount(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhooks.deliveries WHERE state = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("webhooks: count pending deliveries: %w", err)
	}
	return n, nil
}
