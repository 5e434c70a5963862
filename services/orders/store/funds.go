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

// Fund is a row of orders.funds.
type Fund struct {
	TenantID        uuid.UUID
	ID              uuid.UUID
	Name            string
	Description     string
	IsTaxDeductible bool
	// ProcessingFeeBP is hundredths of a percent.
	ProcessingFeeBP int64
	IsActive        bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// FundColumns are the columns ScanFund reads.
const FundColumns = `tenant_id, id, name, description, is_tax_deductible, processing_fee_bp, is_active, created_at, updated_at`

// ScanFund reads a row of FundColumns.
func ScanFund(row pgx.Row) (Fund, error) {
	var f Fund
	if err := row.Scan(&f.TenantID, &f.ID, &f.Name, &f.Description, &f.IsTaxDeductible, &f.ProcessingFeeBP, &f.IsActive, &f.CreatedAt, &f.UpdatedAt); err != nil {
		return Fund{}, fmt.Errorf("read fund: %w", db.Interpret(err))
	}
	return f, nil
}

func (f Fund) snapshot() map[string]any {
	return map[string]any{"name": f.Name, "description": f.Description, "isTaxDeductible": f.IsTaxDeductible,
		"processingFeeBasisPoints": f.ProcessingFeeBP, "isActive": f.IsActive}
}

// ListFunds returns every fund of the tenant sorted by name.
func (s *Store) ListFunds(ctx context.Context, tenantID uuid.UUID) ([]Fund, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+FundColumns+` FROM orders.funds WHERE tenant_id = $1 ORDER BY lower(name), id`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("orders: list funds: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Fund, error) { return ScanFund(r) })
	if err != nil {
		return nil, fmt.Errorf("orders: list funds: %w", err)
	}
	return list, nil
}

// GetFunds returns the tenant's funds with the given ids by id.
func (s *Store) GetFunds(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]Fund, error) {
	if len(ids) == 0 { // an order of items only: no round trip
		return map[uuid.UUID]Fund{}, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+FundColumns+` FROM orders.funds WHERE tenant_id = $1 AND id = ANY($2)`, tenantID, ids)
	if err != nil {
		return nil, fmt.Errorf("orders: get funds: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Fund, error) { return ScanFund(r) })
	if err != nil {
		return nil, fmt.Errorf("orders: get funds: %w", err)
	}
	m := make(map[uuid.UUID]Fund, len(list))
	for _, f := range list {
		m[f.ID] = f
	}
	return m, nil
}

// CreateFund inserts f with a new id.
func (s *Store) CreateFund(ctx context.Context, f Fund, actor string) (Fund, error) {
	f.ID = uuid.Must(uuid.NewV7())
	var out Fund
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = ScanFund(tx.QueryRow(ctx, `INSERT INTO orders.funds (tenant_id, id, name, description, is_tax_deductible, processing_fee_bp, is_active)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+FundColumns,
			f.TenantID, f.ID, f.Name, f.Description, f.IsTaxDeductible, f.ProcessingFeeBP, f.IsActive))
		if err != nil {
			return fmt.Errorf("insert fund: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: f.TenantID.String(), EntityType: EntityFund, EntityID: f.ID.String(), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if db.IsUniqueViolation(err, "funds_tenant_name_key") {
		return Fund{}, fmt.Errorf("orders: create fund: %w", ErrDuplicateName)
	}
	if err != nil {
		return Fund{}, fmt.Errorf("orders: create fund: %w", err)
	}
	return out, nil
}

// UpdateFund replaces the editable fields of the fund f.ID and records
// what changed. Nothing is written when nothing changed.
func (s *Store) UpdateFund(ctx context.Context, f Fund, actor string) (Fund, error) {
	var out Fund
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := ScanFund(tx.QueryRow(ctx, `SELECT `+FundColumns+` FROM orders.funds WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, f.TenantID, f.ID))
		if err != nil {
			return fmt.Errorf("lock fund: %w", err)
		}
		if audit.Diff(before.snapshot(), f.snapshot()) == nil {
			// A PUT that changes nothing writes nothing: no audit row,
			// updatedAt unchanged.
			out = before
			return nil
		}
		out, err = ScanFund(tx.QueryRow(ctx, `UPDATE orders.funds SET name = $3, description = $4, is_tax_deductible = $5,
				processing_fee_bp = $6, is_active = $7, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+FundColumns,
			f.TenantID, f.ID, f.Name, f.Description, f.IsTaxDeductible, f.ProcessingFeeBP, f.IsActive))
		if err != nil {
			return fmt.Errorf("update fund row: %w", err)
		}
		changes := audit.Diff(before.snapshot(), out.snapshot())
		if changes == nil {
			return nil
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: f.TenantID.String(), EntityType: EntityFund, EntityID: f.ID.String(),
			Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if db.IsUniqueViolation(err, "funds_tenant_name_key") {
		return Fund{}, fmt.Errorf("orders: update fund %s: %w", f.ID, ErrDuplicateName)
	}
	if err != nil {
		return Fund{}, fmt.Errorf("orders: update fund %s: %w", f.ID, err)
	}
	return out, nil
}
