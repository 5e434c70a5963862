// Package store is the webhooks service's SQL: endpoints, the delivery
// queue the dispatcher works from, and the attempt records.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Store reads and writes the webhooks schema.
type Store struct {
	pool *pgxpool.Pool
	// reads serves the deliveries lists (ListAttempts) and the event
	// feed's history: a read replica within its lag bound, else pool
	// (docs/scaling.md).
	reads *db.ReadPool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, reads: db.NewReadPool(pool)} }

// WithReads has the deliveries lists read through reads (nil: the
// primary); it returns s.
func (s *Store) WithReads(reads *db.ReadPool) *Store {
	if reads != nil {
		s.reads = reads
	}
	return s
}

// Reads is the read pool of the reads that may lag (the deliveries
// lists, the event feed's history).
func (s *Store) Reads() *db.ReadPool { return s.reads }

// Pool is the store's pool, for the audit reader.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// EntityType is the audit entity type of an endpoint. Its events
// (webhook_endpoint.*) are not in the subscribable catalog.
const EntityType = "WebhookEndpoint"

// Endpoint is a webhook endpoint row.
type Endpoint struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	Name        string
	URL         string
	Description string
	EventTypes  []string
	// SecretBox is the sealed signing secret.
	SecretBox []byte
	Active    bool
	CreatedAt time.Time
	UpdatedAt time.Time
	DeletedAt *time.Time
	// DisabledReason is set when the dispatcher switched the endpoint off
	// after 5 days of failed attempts (DisableFailing); nil otherwise.
	DisabledReason *string
}

const endpointColumns = `tenant_id, id, name, url, description, event_types, secret_box, active, created_at, updated_at, deleted_at, disabled_reason`

func scanEndpoint(r pgx.Row) (Endpoint, error) {
	var e Endpoint
	if err := r.Scan(&e.TenantID, &e.ID, &e.Name, &e.URL, &e.Description, &e.EventTypes, &e.SecretBox, &e.Active, &e.CreatedAt, &e.UpdatedAt, &e.DeletedAt, &e.DisabledReason); err != nil {
		return Endpoint{}, fmt.Errorf("read endpoint: %w", db.Interpret(err))
	}
	return e, nil
}

// horizon is the audit position from which a new (or re-activated)
// endpoint receives events: the oldest transaction still running. Events
// of transactions that ended earlier are history and not delivered.
func horizon(ctx context.Context, tx pgx.Tx) (string, error) {
	var xmin uint64
	if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::numeric::bigint`).Scan(&xmin); err != nil {
		return "", fmt.Errorf("audit horizon: %w", err)
	}
	return audit.Cursor{XID: xmin}.String(), nil
}

func snapshot(e Endpoint) map[string]any {
	return map[string]any{"name": e.Name, "url": e.URL, "description": e.Description, "eventTypes": e.EventTypes, "active": e.Active,
		"disabledReason": e.DisabledReason}
}

// ErrEndpointLimit is returned when a change would give a tenant more active
// endpoints than the limit allows.
var ErrEndpointLimit = errors.New("webhook endpoint limit reached")

// lockTenantEndpoints takes the tenant's endpoint-count lock, a transaction
// advisory lock (this schema has no tenant row to lock). Every change that
// adds an active endpoint takes it before counting, so two of them at the
// limit minus one cannot both pass.
func lockTenantEndpoints(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "webhooks.endpoints:"+tenantID.String()); err != nil {
		return fmt.Errorf("lock the tenant's endpoints: %w", err)
	}
	return nil
}

// checkEndpointLimit fails with ErrEndpointLimit when the tenant already has
// limit active endpoints. Run it after lockTenantEndpoints, as a statement of
// its own: under READ COMMITTED it then sees the endpoint that the previous
// holder of the lock committed.
func checkEndpointLimit(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, limit int) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks.endpoints WHERE tenant_id = $1 AND active AND deleted_at IS NULL`,
		tenantID).Scan(&n); err != nil {
		return fmt.Errorf("count active endpoints: %w", err)
	}
	if n >= limit {
		return fmt.Errorf("%d active endpoints: %w", n, ErrEndpointLimit)
	}
	return nil
}

// CreateEndpoint inserts e (ID, TenantID set) and its audit row, whatever
// the tenant already has; the API registers with CreateEndpointLimited.
func (s *Store) CreateEndpoint(ctx context.Context, e Endpoint, actor string) (Endpoint, error) {
	return s.CreateEndpointLimited(ctx, e, actor, 0) // its errors say "webhooks: create endpoint"
}

// CreateEndpointLimited is CreateEndpoint that, with limit > 0, refuses
// (ErrEndpointLimit) a tenant that already has limit active endpoints.
func (s *Store) CreateEndpointLimited(ctx context.Context, e Endpoint, actor string, limit int) (Endpoint, error) {
	var out Endpoint
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if limit > 0 {
			if err := lockTenantEndpoints(ctx, tx, e.TenantID); err != nil {
				return err
			}
			if err := checkEndpointLimit(ctx, tx, e.TenantID, limit); err != nil {
				return err
			}
		}
		cur, err := horizon(ctx, tx)
		if err != nil {
			return err
		}
		out, err = scanEndpoint(tx.QueryRow(ctx, `
			INSERT INTO webhooks.endpoints (tenant_id, id, name, url, description, event_types, secret_box, active, cursor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8) RETURNING `+endpointColumns,
			e.TenantID, e.ID, e.Name, e.URL, e.Description, e.EventTypes, e.SecretBox, cur))
		if err != nil {
			return fmt.Errorf("insert endpoint: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: e.TenantID.String(), EntityType: EntityType, EntityID: e.ID.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("webhooks: create endpoint: %w", err)
	}
	return out, nil
}

// ListEndpoints returns the tenant's endpoints that are not deleted, oldest
// first.
func (s *Store) ListEndpoints(ctx context.Context, tenantID uuid.UUID) ([]Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhooks.endpoints
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("webhooks: list endpoints: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("webhooks: list endpoints: %w", err)
	}
	return list, nil
}

// GetEndpoint reads one endpoint; deleted ones only when withDeleted.
func (s *Store) GetEndpoint(ctx context.Context, tenantID, id uuid.UUID, withDeleted bool) (Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhooks.endpoints
		WHERE tenant_id = $1 AND id = $2 AND ($3 OR deleted_at IS NULL)`, tenantID, id, withDeleted))
	if err != nil {
		return Endpoint{}, fmt.Errorf("webhooks: get endpoint %s: %w", id, err)
	}
	return e, nil
}

// UpdateEndpoint replaces the editable fields of a live endpoint. An
// endpoint switched back on starts from the current audit horizon: events
// of the time it was off are not delivered; with limit > 0 it is refused
// (ErrEndpointLimit) when the tenant already has limit active endpoints.
// Nothing is written when nothing changed.
func (s *Store) UpdateEndpoint(ctx context.Context, e Endpoint, actor string, limit int) (Endpoint, error) {
	var out Endpoint
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The count lock comes before the row lock, in the order creation
		// takes them, whenever the update may switch the endpoint on.
		if e.Active && limit > 0 {
			if err := lockTenantEndpoints(ctx, tx, e.TenantID); err != nil {
				return err
			}
		}
		before, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhooks.endpoints
			WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`, e.TenantID, e.ID))
		if err != nil {
			return fmt.Errorf("lock endpoint: %w", err)
		}
		want := e
		want.DisabledReason = before.DisabledReason
		if e.Active {
			want.DisabledReason = nil
		}
		if audit.Diff(snapshot(before), snapshot(want)) == nil {
			// A PUT that changes nothing writes nothing: no audit row,
			// updatedAt unchanged.
			out = before
			return nil
		}
		cur, err := reactivation(ctx, tx, before, e, limit)
		if err != nil {
			return err
		}
		out, err = scanEndpoint(tx.QueryRow(ctx, `
			UPDATE webhooks.endpoints SET name = $3, url = $4, description = $5, event_types = $6, active = $7,
				cursor = CASE WHEN $8 = '' THEN cursor ELSE $8 END, updated_at = now(),
				active_since = CASE WHEN $7 AND NOT active THEN now() ELSE active_since END,
				disabled_reason = CASE WHEN $7 THEN NULL ELSE disabled_reason END
			WHERE tenant_id = $1 AND id = $2 RETURNING `+endpointColumns,
			e.TenantID, e.ID, e.Name, e.URL, e.Description, e.EventTypes, e.Active, cur))
		if err != nil {
			return fmt.Errorf("update endpoint row: %w", err)
		}
		if ch := audit.Diff(snapshot(before), snapshot(out)); ch != nil {
			if err := audit.Record(ctx, tx, audit.Entry{TenantID: e.TenantID.String(), EntityType: EntityType, EntityID: e.ID.String(), Action: audit.Updated, Changes: ch, Actor: actor}); err != nil {
				return fmt.Errorf("record audit: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("webhooks: update endpoint %s: %w", e.ID, err)
	}
	return out, nil
}

// reactivation checks what switching an endpoint back on needs: the
// tenant's endpoint limit, and the cursor it starts from ("" keeps its
// own). A manually deactivated endpoint starts again from now; one the
// dispatcher switched off resumes where it stopped, so nothing of the
// time it failed is lost.
func reactivation(ctx context.Context, tx pgx.Tx, before, e Endpoint, limit int) (string, error) {
	if !e.Active || before.Active {
		return "", nil
	}
	if limit > 0 {
		if err := checkEndpointLimit(ctx, tx, e.TenantID, limit); err != nil {
			return "", err
		}
	}
	if before.DisabledReason != nil {
		return "", nil
	}
	return horizon(ctx, tx)
}

// DeleteEndpoint revokes an endpoint: it disappears from the list and
// receives nothing more; its pending deliveries go, its delivery records
// (the attempts made) stay.
func (s *Store) DeleteEndpoint(ctx context.Context, tenantID, id uuid.UUID, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhooks.endpoints SET deleted_at = now(), updated_at = now()
			WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
		if err != nil {
			return fmt.Errorf("mark endpoint deleted: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return db.ErrNotFound
		}
		// Its queue goes: nothing is sent to a deleted endpoint, and its
		// pending rows only slowed every claim that skipped them. The
		// attempts made stay, as the endpoint's delivery records.
		if _, err := tx.Exec(ctx, `DELETE FROM webhooks.deliveries WHERE tenant_id = $1 AND endpoint_id = $2 AND state = 'pending'`,
			tenantID, id); err != nil {
			return fmt.Errorf("drop the endpoint's pending deliveries: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityType, EntityID: id.String(), Action: audit.Deleted, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("webhooks: delete endpoint %s: %w", id, err)
	}
	return nil
}
