// Package store is the reports service's SQL: the report queries over the
// other services' published views, and its own tables (saved definitions,
// run records).
package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Column types as the wire names them.
const (
	Integer = "Integer"
	String  = "String"
	Date    = "Date"
	Decimal = "Decimal"
	Boolean = "Boolean"
	Percent = "Percent"
)

// Column is one column of a report. The query returns it as: Integer →
// bigint, String → text, Date → date, Decimal → bigint minor units of the
// row's Currency, Boolean → boolean, Percent → text (an exact decimal).
type Column struct {
	Key, Label, Type string
	// Sum marks the columns the totals add up, per currency.
	Sum bool
}

// Query is a report's SQL. $1 is the tenant; Args are $2 onwards. Order is
// the ORDER BY over the output column names and must be a total order so
// pages do not overlap.
type Query struct {
	SQL   string
	Args  []any
	Order string
}

// Store reads reports and keeps definitions.
type Store struct{ pool *pgxpool.Pool }

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool exposes the pool to tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func (q Query) args(tenantID uuid.UUID) []any {
	return append([]any{tenantID}, q.Args...)
}

// Row is one row's values in column order: int64, string, time.Time, bool
// or nil.
type Row []any

// Totals is the total row of one currency ("" when the report has none).
type Totals struct {
	Currency string
	Row      Row
}

// Page runs q and returns rows [offset, offset+limit), the number of rows
// and the totals per currency.
func (s *Store) Page(ctx context.Context, tenantID uuid.UUID, q Query, cols []Column, offset, limit int64) ([]Row, int64, []Totals, error) {
	// One read-only snapshot: the count, the totals and the page agree.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	args := q.args(tenantID)
	n := len(args)
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT * FROM (%s) r ORDER BY %s LIMIT $%d OFFSET $%d`, q.SQL, q.Order, n+1, n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) { return r.Values() })
	if err != nil {
		return nil, 0, nil, err
	}
	total, totals, err := s.totals(ctx, tx, args, q, cols)
	return out, total, totals, err
}

// totals counts the rows and adds up the Sum columns per currency (or over
// every row when the report has no Currency column).
func (s *Store) totals(ctx context.Context, tx pgx.Tx, args []any, q Query, cols []Column) (int64, []Totals, error) {
	hasCurrency, hasSum := false, false
	sel := []string{"count(*)"}
	for _, c := range cols {
		if c.Key == "Currency" {
			hasCurrency = true
		}
		if c.Sum {
			hasSum = true
			sel = append(sel, fmt.Sprintf(`coalesce(sum(%q), 0)::bigint`, c.Key))
		}
	}
	group := ""
	if hasCurrency {
		sel = append(sel, `"Currency"`)
		group = ` GROUP BY "Currency" ORDER BY "Currency"`
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT %s FROM (%s) r%s`, strings.Join(sel, ", "), q.SQL, group), args...)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var total int64
	var out []Totals
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return 0, nil, err
		}
		total += vals[0].(int64)
		t := Totals{Row: make(Row, len(cols))}
		i := 1
		for j, c := range cols {
			if c.Sum {
				t.Row[j] = vals[i]
				i++
			}
		}
		if hasCurrency {
			t.Currency, _ = vals[i].(string)
			for j, c := range cols {
				if c.Key == "Currency" {
					t.Row[j] = t.Currency
				}
			}
		}
		// A report with nothing to add up (donor-retention) has no totals.
		if hasCurrency || (hasSum && vals[0].(int64) > 0) {
			out = append(out, t)
		}
	}
	return total, out, rows.Err()
}

// Stream runs q and calls fn for every row in order without holding them:
// pgx reads rows off the connection as fn consumes them, so memory stays
// flat however many rows there are.
func (s *Store) Stream(ctx context.Context, tenantID uuid.UUID, q Query, fn func(Row) error) (int64, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT * FROM (%s) r ORDER BY %s`, q.SQL, q.Order), q.args(tenantID)...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return n, err
		}
		if err := fn(vals); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// Totals computes the totals of q alone (exports write them last).
func (s *Store) Totals(ctx context.Context, tenantID uuid.UUID, q Query, cols []Column) (int64, []Totals, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	return s.totals(ctx, tx, q.args(tenantID), q, cols)
}
