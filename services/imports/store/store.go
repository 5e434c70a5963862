// Package store is the imports service's SQL: the import rows with their
// status, counts, checkpoint and lease (imports.go), the uploaded file's
// chunks (chunks.go) and the rejected rows (errors.go).
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

// Store reads and writes schema imports.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// The statuses of an import. Uploading is internal: nobody outside the
// upload knows the import yet.
const (
	Uploading  = "uploading"
	Queued     = "queued"
	Validating = "validating"
	Importing  = "importing"
	Succeeded  = "succeeded"
	Failed     = "failed"
)

// EntityType is the audit log's name of an import (events import.*).
const EntityType = "Import"

// ErrLeaseLost is a runner's write to an import whose lease another
// runner has taken (or that is no longer running): the runner drops what
// it holds and lets the holder go on.
var ErrLeaseLost = errors.New("the import's lease is held by another runner")

// Import is one import.
type Import struct {
	TenantID       uuid.UUID
	ID             uuid.UUID
	Kind           string
	Format         string
	Duplicates     string
	DryRun         bool
	Currency       string
	Status         string
	Rows           int64
	Created        int64
	Updated        int64
	Skipped        int64
	Failed         int64
	SizeBytes      int64
	SHA256         []byte
	IdempotencyKey *string
	Checkpoint     int64
	LeaseUntil     *time.Time
	Actor          string
	Message        string
	CreatedAt      time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
}

const importColumns = `tenant_id, id, kind, format, duplicates, dry_run, currency, status, rows, created, updated, skipped, failed,
	size_bytes, sha256, idempotency_key, checkpoint, lease_until, actor, message, created_at, started_at, finished_at`

func scanImport(r pgx.Row) (Import, error) {
	var m Import
	err := r.Scan(&m.TenantID, &m.ID, &m.Kind, &m.Format, &m.Duplicates, &m.DryRun, &m.Currency, &m.Status, &m.Rows,
		&m.Created, &m.Updated, &m.Skipped, &m.Failed, &m.SizeBytes, &m.SHA256, &m.IdempotencyKey, &m.Checkpoint,
		&m.LeaseUntil, &m.Actor, &m.Message, &m.CreatedAt, &m.StartedAt, &m.FinishedAt)
	if err != nil {
		return m, fmt.Errorf("read import: %w", db.Interpret(err))
	}
	return m, nil
}

// record writes an import's audit row: Created, or Updated with the status
// change (import.created, import.updated).
func record(ctx context.Context, tx pgx.Tx, m Import, action, oldStatus, actor string) error {
	e := audit.Entry{TenantID: m.TenantID.String(), EntityType: EntityType, EntityID: m.ID.String(), Action: action, Actor: actor}
	if action == audit.Updated {
		e.Changes = map[string]audit.Change{"status": {Old: oldStatus, New: m.Status}}
	}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

func interval(d time.Duration) string { return d.String() }
