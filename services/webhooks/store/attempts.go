package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Attempt is the record of one delivery attempt.
type Attempt struct {
	TenantID   uuid.UUID
	ID         uuid.UUID
	EndpointID uuid.UUID
	// DeliveryID is the queued delivery; uuid.Nil for a test event.
	DeliveryID  uuid.UUID
	EventID     uuid.UUID
	Event       string
	Attempt     int
	AttemptedAt time.Time
	Success     bool
	// StatusCode is 0 when no response came.
	StatusCode int
	Duration   time.Duration
	// Error is the sanitized failure reason; "" on success.
	Error     string
	Abandoned bool
}

// InsertAttempt records one attempt outside the queue (the test event).
func (s *Store) InsertAttempt(ctx context.Context, a Attempt) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO webhooks.attempts (tenant_id, id, endpoint_id, delivery_id, event_id, event, attempt, attempted_at,
			success, status_code, duration_ms, error, abandoned)
		VALUES ($1, $2, $3, NULLIF($4, '00000000-0000-0000-0000-000000000000'::uuid), $5, $6, $7, $8, $9, NULLIF($10, 0), $11, NULLIF($12, ''), $13)`,
		a.TenantID, a.ID, a.EndpointID, a.DeliveryID, a.EventID, a.Event, a.Attempt, a.AttemptedAt,
		a.Success, a.StatusCode, a.Duration.Milliseconds(), a.Error, a.Abandoned)
	if err != nil {
		return fmt.Errorf("webhooks: insert attempt: %w", err)
	}
	return nil
}

const attemptColumns = `tenant_id, id, endpoint_id, coalesce(delivery_id, '00000000-0000-0000-0000-000000000000'::uuid), event_id, event,
	attempt, attempted_at, success, coalesce(status_code, 0), duration_ms, coalesce(error, ''), abandoned`

func scanAttempt(r pgx.Row) (Attempt, error) {
	var a Attempt
	var ms int64
	err := r.Scan(&a.TenantID, &a.ID, &a.EndpointID, &a.DeliveryID, &a.EventID, &a.Event, &a.Attempt, &a.AttemptedAt,
		&a.Success, &a.StatusCode, &ms, &a.Error, &a.Abandoned)
	a.Duration = time.Duration(ms) * time.Millisecond
	return a, err
}

// AttemptFilter narrows ListAttempts.
type AttemptFilter struct {
	// Success keeps successful (true) or failed (false) attempts; nil both.
	Success *bool
	// Events keeps attempts of these event types; empty keeps all.
	Events []string
}

// ListAttempts returns one page of an endpoint's attempts that pass f,
// newest first, and how many there are.
func (s *Store) ListAttempts(ctx context.Context, tenantID, endpointID uuid.UUID, f AttemptFilter, limit int32, offset int64) ([]Attempt, int64, error) {
	// The filters are arguments, not SQL text: nulls and empty arrays keep
	// every attempt.
	const where = `WHERE tenant_id = $1 AND endpoint_id = $2 AND ($3::bool IS NULL OR success = $3)
		AND (cardinality($4::text[]) = 0 OR event = ANY($4))`
	events := f.Events
	if events == nil {
		events = []string{}
	}
	var total int64
	var out []Attempt
	// A list may lag the attempts by the read replica's bound: one made a
	// second ago shows at the next look (docs/scaling.md).
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		if err := p.QueryRow(ctx, `SELECT count(*) FROM webhooks.attempts `+where,
			tenantID, endpointID, f.Success, events).Scan(&total); err != nil {
			return fmt.Errorf("webhooks: count attempts: %w", err)
		}
		rows, err := p.Query(ctx, `SELECT `+attemptColumns+` FROM webhooks.attempts `+where+`
			ORDER BY attempted_at DESC, id DESC LIMIT $5 OFFSET $6`, tenantID, endpointID, f.Success, events, limit, offset)
		if err != nil {
			return fmt.Errorf("webhooks: list attempts: %w", err)
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attempt, error) { return scanAttempt(r) })
		if err != nil {
			return fmt.Errorf("webhooks: list attempts: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}
