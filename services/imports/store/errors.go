package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// RowError is why one row was rejected: the column refused ("" for the
// row as a whole) and what is wrong.
type RowError struct {
	Row     int64
	Column  string
	Message string
}

// insertErrors records errs of m in tx; an error already recorded (a
// batch or a validation done again after a resume) is kept as it was.
func insertErrors(ctx context.Context, tx pgx.Tx, m Import, errs []RowError) error {
	if len(errs) == 0 {
		return nil
	}
	rows := make([]int64, len(errs))
	cols, msgs := make([]string, len(errs)), make([]string, len(errs))
	for i, e := range errs {
		rows[i], cols[i], msgs[i] = e.Row, e.Column, e.Message
	}
	_, err := tx.Exec(ctx, `INSERT INTO imports.import_errors (tenant_id, import_id, row, column_name, message)
		SELECT $1, $2, u.row, u.col, u.msg FROM unnest($3::bigint[], $4::text[], $5::text[]) AS u(row, col, msg)
		ON CONFLICT DO NOTHING`, m.TenantID, m.ID, rows, cols, msgs)
	if err != nil {
		return fmt.Errorf("insert errors: %w", err)
	}
	return nil
}

// AddErrors records rows refused by validation (pass 1), idempotently.
func (s *Store) AddErrors(ctx context.Context, m Import, errs []RowError) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error { return insertErrors(ctx, tx, m, errs) })
	if err != nil {
		return fmt.Errorf("imports: record errors of %s: %w", m.ID, err)
	}
	return nil
}

// ListErrors returns one page of an import's errors by row and column,
// and how many there are in all.
func (s *Store) ListErrors(ctx context.Context, tenantID, id uuid.UUID, limit int32, offset int64) ([]RowError, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM imports.import_errors WHERE tenant_id = $1 AND import_id = $2`,
		tenantID, id).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("imports: count errors of %s: %w", id, db.Interpret(err))
	}
	rows, _ := s.pool.Query(ctx, `SELECT row, column_name, message FROM imports.import_errors
		WHERE tenant_id = $1 AND import_id = $2 ORDER BY row, column_name LIMIT $3 OFFSET $4`, tenantID, id, limit, offset)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RowError, error) {
		var e RowError
		err := r.Scan(&e.Row, &e.Column, &e.Message)
		return e, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("imports: errors of %s: %w", id, db.Interpret(err))
	}
	return out, total, nil
}
