package shipstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Filter narrows shipments; zero fields do not filter.
type Filter struct {
	Status    string
	BatchID   *uuid.UUID
	OrderID   *uuid.UUID
	ContactID *int64
	// From and To bound the creation time: From ≤ createdAt < To.
	From, To *time.Time
}

// filterWhere is the WHERE of a Filter, its arguments $1 to $7.
const filterWhere = `tenant_id = $1
	AND ($2::text = '' OR status = $2)
	AND ($3::uuid IS NULL OR batch_id = $3)
	AND ($4::uuid IS NULL OR order_id = $4)
	AND ($5::bigint IS NULL OR contact_id = $5)
	AND ($6::timestamptz IS NULL OR created_at >= $6)
	AND ($7::timestamptz IS NULL OR created_at < $7)`

func (f Filter) args(tenantID uuid.UUID) []any {
	return []any{tenantID, f.Status, f.BatchID, f.OrderID, f.ContactID, f.From, f.To}
}

// List returns one page of the tenant's shipments matching f, newest
// first, with their lines, and how many match on all pages.
func (s *Store) List(ctx context.Context, tenantID uuid.UUID, f Filter, limit int32, offset int64) ([]Shipment, int64, error) {
	args := f.args(tenantID)
	rows, err := s.pool.Query(ctx, `SELECT `+columns+`, count(*) OVER () FROM inventory.shipments WHERE `+filterWhere+`
		ORDER BY created_at DESC, id DESC LIMIT $8 OFFSET $9`, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("inventory: list shipments: %w", err)
	}
	var total int64
	shs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Shipment, error) { return scan(r, &total) })
	if err != nil {
		return nil, 0, fmt.Errorf("inventory: list shipments: %w", err)
	}
	if len(shs) == 0 && offset > 0 {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM inventory.shipments WHERE `+filterWhere, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("inventory: count shipments: %w", err)
		}
	}
	if err := loadLines(ctx, s.pool, tenantID, shs); err != nil {
		return nil, 0, fmt.Errorf("inventory: list shipments: %w", err)
	}
	return shs, total, nil
}
