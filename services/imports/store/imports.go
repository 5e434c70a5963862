package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// ErrKeyTaken is BeginUpload's answer when the tenant already has an
// import with the idempotency key.
var ErrKeyTaken = errors.New("the idempotency key names another import")

// BeginUpload inserts m as an upload in progress, leased for lease (the
// upload renews it as chunks arrive); ErrKeyTaken when m's idempotency key
// is the tenant's already.
func (s *Store) BeginUpload(ctx context.Context, m Import, lease time.Duration) (Import, error) {
	out, err := scanImport(s.pool.QueryRow(ctx, `INSERT INTO imports.imports
			(tenant_id, id, kind, format, duplicates, dry_run, currency, idempotency_key, actor, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + $10::interval) RETURNING `+importColumns,
		m.TenantID, m.ID, m.Kind, m.Format, m.Duplicates, m.DryRun, m.Currency, m.IdempotencyKey, m.Actor, interval(lease)))
	if db.IsUniqueViolation(err, "imports_idempotency_key") {
		return out, ErrKeyTaken
	}
	if err != nil {
		return out, fmt.Errorf("imports: begin upload: %w", err)
	}
	return out, nil
}

// ByKey reads the tenant's import with an idempotency key, uploading or
// not; db.ErrNotFound when there is none.
func (s *Store) ByKey(ctx context.Context, tenantID uuid.UUID, key string) (Import, error) {
	m, err := scanImport(s.pool.QueryRow(ctx, `SELECT `+importColumns+` FROM imports.imports
		WHERE tenant_id = $1 AND idempotency_key = $2`, tenantID, key))
	if err != nil {
		return m, fmt.Errorf("imports: import by idempotency key: %w", err)
	}
	return m, nil
}

// RenewUpload extends an upload's lease.
func (s *Store) RenewUpload(ctx context.Context, tenantID, id uuid.UUID, lease time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE imports.imports SET lease_until = now() + $3::interval
		WHERE tenant_id = $1 AND id = $2 AND status = 'uploading'`, tenantID, id, interval(lease))
	if err != nil {
		return fmt.Errorf("imports: renew upload %s: %w", id, db.Interpret(err))
	}
	return nil
}

// DeleteUpload deletes an upload that did not finish, with its chunks.
// expired limits it to an upload whose lease ran out (its process died);
// deleted says whether there was one.
func (s *Store) DeleteUpload(ctx context.Context, tenantID, id uuid.UUID, expired bool) (deleted bool, err error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM imports.imports
		WHERE tenant_id = $1 AND id = $2 AND status = 'uploading' AND (NOT $3 OR lease_until < now())`, tenantID, id, expired)
	if err != nil {
		return false, fmt.Errorf("imports: delete upload %s: %w", id, db.Interpret(err))
	}
	return tag.RowsAffected() > 0, nil
}

// SweepUploads deletes the uploads whose lease ran out: their processes
// died mid-upload, and nobody can finish them.
func (s *Store) SweepUploads(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM imports.imports WHERE status = 'uploading' AND lease_until < now()`)
	if err != nil {
		return 0, fmt.Errorf("imports: sweep abandoned uploads: %w", db.Interpret(err))
	}
	return tag.RowsAffected(), nil
}

// FinishUpload queues an upload whose file is all stored (size bytes with
// the given digest) and writes its audit row Created, in one transaction.
func (s *Store) FinishUpload(ctx context.Context, tenantID, id uuid.UUID, size int64, sum []byte, actor string) (Import, error) {
	var out Import
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanImport(tx.QueryRow(ctx, `UPDATE imports.imports SET status = 'queued', size_bytes = $3, sha256 = $4,
				lease_until = NULL, created_at = now()
			WHERE tenant_id = $1 AND id = $2 AND status = 'uploading' RETURNING `+importColumns, tenantID, id, size, sum))
		if err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		return record(ctx, tx, out, audit.Created, "", actor)
	})
	if err != nil {
		return out, fmt.Errorf("imports: finish upload %s: %w", id, err)
	}
	return out, nil
}

// Get reads an import of the tenant; db.ErrNotFound when there is none or
// it is still uploading (nobody has its id yet).
func (s *Store) Get(ctx context.Context, tenantID, id uuid.UUID) (Import, error) {
	m, err := scanImport(s.pool.QueryRow(ctx, `SELECT `+importColumns+` FROM imports.imports
		WHERE tenant_id = $1 AND id = $2 AND status <> 'uploading'`, tenantID, id))
	if err != nil {
		return m, fmt.Errorf("imports: get import %s: %w", id, err)
	}
	return m, nil
}
