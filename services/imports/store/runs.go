package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Claim gives owner the lease of the oldest import no live lease holds
// (queued, or validating or importing under a lease that ran out: its
// runner stopped), for lease. A queued import becomes validating (its
// audit row says so); a leased one keeps its status and checkpoint, so its
// new runner resumes it. ok is false when there is none.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration, actor func(Import) string) (m Import, ok bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanImport(tx.QueryRow(ctx, `SELECT `+importColumns+` FROM imports.imports
			WHERE status = 'queued' OR (status IN ('validating', 'importing') AND lease_until < now())
			ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`))
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		m, err = scanImport(tx.QueryRow(ctx, `UPDATE imports.imports SET
				status = CASE status WHEN 'queued' THEN 'validating' ELSE status END,
				lease_owner = $3, lease_until = now() + $4::interval, started_at = coalesce(started_at, now())
			WHERE tenant_id = $1 AND id = $2 RETURNING `+importColumns, cur.TenantID, cur.ID, owner, interval(lease)))
		if err != nil {
			return fmt.Errorf("take lease: %w", err)
		}
		ok = true
		if cur.Status == Queued {
			return record(ctx, tx, m, audit.Updated, cur.Status, actor(m))
		}
		return nil
	})
	if err != nil {
		return m, false, fmt.Errorf("imports: claim import: %w", err)
	}
	return m, ok, nil
}

// Renew extends owner's lease of a running import; ErrLeaseLost when
// owner no longer holds it.
func (s *Store) Renew(ctx context.Context, m Import, owner string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE imports.imports SET lease_until = now() + $4::interval
		WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status IN ('validating', 'importing') AND lease_until > now()`,
		m.TenantID, m.ID, owner, interval(lease))
	if err != nil {
		return fmt.Errorf("imports: renew lease of %s: %w", m.ID, db.Interpret(err))
	}
	if tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	return nil
}

// StartImporting ends owner's validation of m: the file has rows data
// rows, failed of them refused; the import becomes importing from its
// first row, with an audit row. The counts are set, not added, so a
// validation run again after a resume counts nothing twice.
func (s *Store) StartImporting(ctx context.Context, m Import, owner string, rows, failed int64, actor string) (Import, error) {
	var out Import
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanImport(tx.QueryRow(ctx, `UPDATE imports.imports SET status = 'importing', rows = $4, failed = $5, checkpoint = 0
			WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status = 'validating' AND lease_until > now()
			RETURNING `+importColumns, m.TenantID, m.ID, owner, rows, failed))
		if errors.Is(err, db.ErrNotFound) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		return record(ctx, tx, out, audit.Updated, Validating, actor)
	})
	if err != nil {
		return out, fmt.Errorf("imports: start importing %s: %w", m.ID, err)
	}
	return out, nil
}

// Counts are the outcomes of a batch of rows.
type Counts struct {
	Created, Updated, Skipped, Failed int64
}

// SaveBatch records a batch of pass 2 in one transaction: its counts are
// added, its errors recorded, the checkpoint moved to the batch's last row
// and owner's lease renewed; ErrLeaseLost when owner no longer holds the
// lease (nothing is written, and the next holder sends the batch again:
// the services answer a repeated row as they did the first time).
func (s *Store) SaveBatch(ctx context.Context, m Import, owner string, c Counts, errs []RowError, checkpoint int64, lease time.Duration) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE imports.imports SET created = created + $4, updated = updated + $5, skipped = skipped + $6,
				failed = failed + $7, checkpoint = $8, lease_until = now() + $9::interval
			WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status = 'importing' AND lease_until > now() AND checkpoint < $8`,
			m.TenantID, m.ID, owner, c.Created, c.Updated, c.Skipped, c.Failed, checkpoint, interval(lease))
		if err != nil {
			return fmt.Errorf("count batch: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrLeaseLost
		}
		return insertErrors(ctx, tx, m, errs)
	})
	if err != nil {
		return fmt.Errorf("imports: save batch of %s: %w", m.ID, err)
	}
	return nil
}

// Finish ends owner's import as succeeded or failed (with the reason),
// writes its audit row and deletes the file's chunks, in one transaction;
// ErrLeaseLost when owner no longer holds it. The import and its errors
// stay.
func (s *Store) Finish(ctx context.Context, m Import, owner, status, message, actor string) (Import, error) {
	var out Import
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The status it leaves, as the database has it: the caller's copy
		// may predate the move from validating to importing.
		var old string
		err := tx.QueryRow(ctx, `SELECT status FROM imports.imports
			WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status IN ('validating', 'importing') FOR UPDATE`,
			m.TenantID, m.ID, owner).Scan(&old)
		if db.IsNoRows(err) {
			return ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("lock: %w", db.Interpret(err))
		}
		out, err = scanImport(tx.QueryRow(ctx, `UPDATE imports.imports SET status = $4, message = $5, finished_at = now(),
				lease_owner = NULL, lease_until = NULL
			WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status IN ('validating', 'importing')
			RETURNING `+importColumns, m.TenantID, m.ID, owner, status, message))
		if errors.Is(err, db.ErrNotFound) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM imports.import_chunks WHERE tenant_id = $1 AND import_id = $2`, m.TenantID, m.ID); err != nil {
			return fmt.Errorf("delete chunks: %w", err)
		}
		return record(ctx, tx, out, audit.Updated, old, actor)
	})
	if err != nil {
		return out, fmt.Errorf("imports: finish %s: %w", m.ID, err)
	}
	return out, nil
}
