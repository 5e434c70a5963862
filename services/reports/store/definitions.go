package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Definition is a saved report.
type Definition struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	Name        string
	Description string
	TypeKey     string
	Parameters  map[string]string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (d Definition) snapshot() map[string]any {
	return map[string]any{"Name": d.Name, "Description": d.Description, "TypeKey": d.TypeKey, "Parameters": d.Parameters}
}

const defColumns = `tenant_id, id, name, description, type_key, parameters, created_at, updated_at`

func scanDef(r pgx.Row) (Definition, error) {
	var d Definition
	var params []byte
	err := r.Scan(&d.TenantID, &d.ID, &d.Name, &d.Description, &d.TypeKey, &params, &d.CreatedAt, &d.UpdatedAt)
	if err != nil {
		// No row: a definition that does not exist in the tenant (or
		// was deleted), db.ErrNotFound.
		return d, fmt.Errorf("read report: %w", db.Interpret(err))
	}
	if err := json.Unmarshal(params, &d.Parameters); err != nil {
		return d, fmt.Errorf("read report parameters: %w", err)
	}
	return d, nil
}

// Create saves d and its audit row.
func (s *Store) Create(ctx context.Context, d Definition, actor string) (Definition, error) {
	params, err := json.Marshal(d.Parameters)
	if err != nil {
		return d, fmt.Errorf("reports: create report: %w", err)
	}
	var out Definition
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out, err = scanDef(tx.QueryRow(ctx, `INSERT INTO reports.definitions (tenant_id, id, name, description, type_key, parameters)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+defColumns, d.TenantID, d.ID, d.Name, d.Description, d.TypeKey, params))
		if err != nil {
			return fmt.Errorf("insert report: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: d.TenantID.String(), EntityType: "Report", EntityID: d.ID.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("reports: create report: %w", err)
	}
	return out, nil
}

// Get reads a live definition.
func (s *Store) Get(ctx context.Context, tenantID, id uuid.UUID) (Definition, error) {
	d, err := scanDef(s.pool.QueryRow(ctx, `SELECT `+defColumns+` FROM reports.definitions WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id))
	if err != nil {
		return d, fmt.Errorf("reports: get report %s: %w", id, err)
	}
	return d, nil
}

// Update replaces a definition's fields with d's, recording the diff.
// Nothing is written when nothing changed.
func (s *Store) Update(ctx context.Context, d Definition, actor string) (Definition, error) {
	params, err := json.Marshal(d.Parameters)
	if err != nil {
		return d, fmt.Errorf("reports: update report %s: %w", d.ID, err)
	}
	var out Definition
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := scanDef(tx.QueryRow(ctx, `SELECT `+defColumns+` FROM reports.definitions WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`, d.TenantID, d.ID))
		if err != nil {
			return fmt.Errorf("lock report: %w", err)
		}
		if audit.Diff(before.snapshot(), d.snapshot()) == nil {
			// A PUT that changes nothing writes nothing: no audit row,
			// updatedAt unchanged.
			out = before
			return nil
		}
		out, err = scanDef(tx.QueryRow(ctx, `UPDATE reports.definitions SET name = $3, description = $4, type_key = $5, parameters = $6, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+defColumns, d.TenantID, d.ID, d.Name, d.Description, d.TypeKey, params))
		if err != nil {
			return fmt.Errorf("update report row: %w", err)
		}
		changes := audit.Diff(before.snapshot(), out.snapshot())
		if changes == nil {
			return nil
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: d.TenantID.String(), EntityType: "Report", EntityID: d.ID.String(), Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("reports: update report %s: %w", d.ID, err)
	}
	return out, nil
}

// Delete soft-deletes a definition: nothing is physically deleted through
// the API, and its run records keep pointing at it.
func (s *Store) Delete(ctx context.Context, tenantID, id uuid.UUID, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE reports.definitions SET deleted_at = now(), updated_at = now() WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, tenantID, id)
		if err != nil {
			return fmt.Errorf("mark report deleted: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return db.ErrNotFound
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: "Report", EntityID: id.String(), Action: audit.Deleted, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reports: delete report %s: %w", id, err)
	}
	return nil
}

// List returns a page of live definitions by name, and how many there are.
func (s *Store) List(ctx context.Context, tenantID uuid.UUID, offset, limit int64) ([]Definition, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM reports.definitions WHERE tenant_id = $1 AND deleted_at IS NULL`, tenantID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("reports: count reports: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+defColumns+` FROM reports.definitions WHERE tenant_id = $1 AND deleted_at IS NULL
		ORDER BY lower(name), id LIMIT $2 OFFSET $3`, tenantID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("reports: list reports: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Definition, error) { return scanDef(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("reports: list reports: %w", err)
	}
	return out, total, nil
}

// Run is the record of one run or export.
type Run struct {
	TenantID   uuid.UUID
	ReportID   *uuid.UUID
	TypeKey    string
	Parameters map[string]string
	// Kind is run or export; Format is the export's format.
	Kind, Format string
	RowCount     int64
	Duration     time.Duration
	Actor        string
}

// RecordRun appends a run record.
func (s *Store) RecordRun(ctx context.Context, r Run) error {
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("reports: record run: %w", err)
	}
	params, err := json.Marshal(r.Parameters)
	if err != nil {
		return fmt.Errorf("reports: record run: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO reports.runs (tenant_id, id, report_id, type_key, parameters, kind, format, row_count, duration_ms, actor)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, r.TenantID, id, r.ReportID, r.TypeKey, params, r.Kind, r.Format, r.RowCount, r.Duration.Milliseconds(), r.Actor)
	if err != nil {
		return fmt.Errorf("reports: record run: %w", err)
	}
	return nil
}
