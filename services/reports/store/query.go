// Package store is the reports service's SQL: the report queries over the
// other services' published views, and its own tables (saved definitions,
// run records).
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/db"
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
type Store struct {
	pool *pgxpool.Pool
	// reads serves report runs and exports: a read replica within its
	// lag bound, else pool (docs/scaling.md).
	reads *db.ReadPool
}

// New returns a store on pool, reading reports from pool too.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, reads: db.NewReadPool(pool)} }

// WithReads has report runs and exports read through reads (nil: the
// primary); it returns s.
func (s *Store) WithReads(reads *db.ReadPool) *Store {
	if reads != nil {
		s.reads = reads
	}
	return s
}

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

// readTx begins a read-only transaction with the settings of a report
// query. Reports sort and hash hundreds of thousands of rows (a year of
// gifts grouped by donor): the server's default work_mem of 4 MB sends
// those to disk, so a report query gets workMem, bounded by the pool size.
// JIT is off: on these plans it compiled for a few hundred milliseconds
// and saved less than that (docs/reports.md, Performance).
// The transaction runs on the read replica when one is configured and
// within its lag bound (db.ReadPool): a report may lag by that bound.
func (s *Store) readTx(ctx context.Context, iso pgx.TxIsoLevel) (pgx.Tx, error) {
	tx, err := s.reads.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('work_mem', $1, true), set_config('jit', 'off', true)`, workMem); err != nil {
			return fmt.Errorf("set work_mem: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return tx, nil
}

// workMem is a report query's work_mem.
const workMem = "64MB"

// Page runs q and returns rows [offset, offset+limit), the number of rows
// and the totals per currency. It is one statement: the report's rows are
// made once (a materialized CTE) and both the page and the totals read
// them, so a run costs one execution of the report's query, not two.
func (s *Store) Page(ctx context.Context, tenantID uuid.UUID, q Query, cols []Column, offset, limit int64) ([]Row, int64, []Totals, error) {
	tx, err := s.readTx(ctx, pgx.ReadCommitted)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reports: run report: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	args := q.args(tenantID)
	n := len(args)
	// A page past the end still yields one row (the totals, with the
	// page's columns null and __row null), hence the LEFT JOIN.
	sql := fmt.Sprintf(`WITH r AS MATERIALIZED (%s)
		SELECT p.*, t.totals::text FROM (SELECT coalesce(json_agg(z), '[]') AS totals FROM (%s) z) t
		LEFT JOIN LATERAL (SELECT r.*, true AS "__row" FROM r ORDER BY %s LIMIT $%d OFFSET $%d) p ON true
		ORDER BY %s`, q.SQL, totalsSQL(cols, "r"), q.Order, n+1, n+2, q.Order)
	rows, err := tx.Query(ctx, sql, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reports: run report: %w", err)
	}
	var out []Row
	var doc string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return nil, 0, nil, fmt.Errorf("reports: run report: %w", err)
		}
		doc, _ = vals[len(vals)-1].(string)
		if vals[len(vals)-2] != nil {
			out = append(out, Row(vals[:len(cols)]))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, nil, fmt.Errorf("reports: run report: %w", err)
	}
	total, totals, err := parseTotals(doc, cols)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reports: run report: %w", err)
	}
	return out, total, totals, nil
}

// totalsSQL counts the rows of from and adds up the Sum columns per
// currency (or over every row when the report has no Currency column),
// ordered by currency.
func totalsSQL(cols []Column, from string) string {
	sel := []string{`count(*) AS "__n"`}
	group := ""
	for _, c := range cols {
		if c.Sum {
			sel = append(sel, fmt.Sprintf(`coalesce(sum(%q), 0)::bigint AS %q`, c.Key, c.Key))
		}
		if c.Key == "Currency" {
			sel = append(sel, `"Currency"`)
			group = ` GROUP BY "Currency" ORDER BY "Currency"`
		}
	}
	return fmt.Sprintf(`SELECT %s FROM %s%s`, strings.Join(sel, ", "), from, group)
}

// parseTotals reads totalsSQL's rows, as a JSON array, into the totals.
func parseTotals(doc string, cols []Column) (int64, []Totals, error) {
	var groups []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &groups); err != nil {
		return 0, nil, fmt.Errorf("report totals: %w", err)
	}
	// The groups go through the totaller's result, so a run's totals and
	// an export's are ordered and left out by the same rules.
	acc := newTotaller(cols)
	for _, g := range groups {
		var count int64
		if err := json.Unmarshal(g["__n"], &count); err != nil {
			return 0, nil, fmt.Errorf("report totals: %w", err)
		}
		t := Totals{Row: make(Row, len(cols))}
		for j, c := range cols {
			switch {
			case c.Sum:
				var v int64
				if err := json.Unmarshal(g[c.Key], &v); err != nil {
					return 0, nil, fmt.Errorf("report totals: %w", err)
				}
				t.Row[j] = v
			case c.Key == "Currency":
				var cur *string
				if err := json.Unmarshal(g[c.Key], &cur); err != nil {
					return 0, nil, fmt.Errorf("report totals: %w", err)
				}
				if cur != nil {
					t.Currency, t.Row[j] = *cur, *cur
				}
			}
		}
		acc.count += count
		acc.groups = append(acc.groups, &t)
	}
	total, totals := acc.result()
	return total, totals, nil
}

// totaller adds up the totals in Go, as rows stream past, with the same
// result as totalsSQL: an export then runs its query once.
type totaller struct {
	cols         []Column
	currency     int // index of the Currency column, -1 when none
	hasSum       bool
	count        int64
	groups       []*Totals
	byCurrency   map[string]*Totals
	nullCurrency *Totals
}

func newTotaller(cols []Column) *totaller {
	a := &totaller{cols: cols, currency: -1, byCurrency: map[string]*Totals{}}
	for i, c := range cols {
		if c.Key == "Currency" {
			a.currency = i
		}
		a.hasSum = a.hasSum || c.Sum
	}
	return a
}

func (a *totaller) add(r Row) {
	a.count++
	var t *Totals
	switch {
	case a.currency < 0:
		if len(a.groups) == 0 {
			a.groups = append(a.groups, a.zero(nil))
		}
		t = a.groups[0]
	default:
		cur, ok := r[a.currency].(string)
		if !ok {
			if a.nullCurrency == nil {
				a.nullCurrency = a.zero(nil)
			}
			t = a.nullCurrency
			break
		}
		if t = a.byCurrency[cur]; t == nil {
			t = a.zero(&cur)
			a.byCurrency[cur] = t
			a.groups = append(a.groups, t)
		}
	}
	for j, c := range a.cols {
		if v, ok := r[j].(int64); ok && c.Sum {
			t.Row[j] = t.Row[j].(int64) + v
		}
	}
}

func (a *totaller) zero(cur *string) *Totals {
	t := &Totals{Row: make(Row, len(a.cols))}
	for j, c := range a.cols {
		if c.Sum {
			t.Row[j] = int64(0)
		}
	}
	if cur != nil {
		t.Currency, t.Row[a.currency] = *cur, *cur
	}
	return t
}

// result is the number of rows and the totals in currency order (a null
// currency last, as PostgreSQL sorts it).
func (a *totaller) result() (int64, []Totals) {
	groups := a.groups
	if a.nullCurrency != nil {
		groups = append(groups, a.nullCurrency)
	}
	var out []Totals
	for _, t := range groups {
		// A report with nothing to add up (donor-retention) has no totals.
		if a.currency >= 0 || (a.hasSum && a.count > 0) {
			out = append(out, *t)
		}
	}
	if a.currency >= 0 {
		slices.SortStableFunc(out, func(x, y Totals) int {
			xn, yn := x.Row[a.currency] == nil, y.Row[a.currency] == nil
			if xn || yn {
				return cmpBool(xn, yn)
			}
			return strings.Compare(x.Currency, y.Currency)
		})
	}
	return a.count, out
}

func cmpBool(x, y bool) int {
	switch {
	case x == y:
		return 0
	case x:
		return 1
	}
	return -1
}

// Stream runs q and calls fn for every row in order without holding them:
// pgx reads rows off the connection as fn consumes them, so memory stays
// flat however many rows there are. It returns the number of rows and the
// totals, added up on the way.
func (s *Store) Stream(ctx context.Context, tenantID uuid.UUID, q Query, cols []Column, fn func(Row) error) (int64, []Totals, error) {
	tx, err := s.readTx(ctx, pgx.ReadCommitted)
	if err != nil {
		return 0, nil, fmt.Errorf("reports: stream report: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT * FROM (%s) r ORDER BY %s`, q.SQL, q.Order), q.args(tenantID)...)
	if err != nil {
		return 0, nil, fmt.Errorf("reports: stream report: %w", err)
	}
	defer rows.Close()
	acc := newTotaller(cols)
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return acc.count, nil, fmt.Errorf("reports: stream report: %w", err)
		}
		if err := fn(vals); err != nil {
			// fn's error is the caller's own (a closed stream's status,
			// whose text a wrap would put in the status message): as it is.
			return acc.count, nil, err
		}
		acc.add(vals)
	}
	if err := rows.Err(); err != nil {
		return acc.count, nil, fmt.Errorf("reports: stream report: %w", err)
	}
	n, totals := acc.result()
	return n, totals, nil
}

// Count returns the number of rows of q (a PDF export checks its size
// before making the file).
func (s *Store) Count(ctx context.Context, tenantID uuid.UUID, q Query) (int64, error) {
	tx, err := s.readTx(ctx, pgx.ReadCommitted)
	if err != nil {
		return 0, fmt.Errorf("reports: count report rows: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var n int64
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (%s) r`, q.SQL), q.args(tenantID)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("reports: count report rows: %w", err)
	}
	return n, nil
}
