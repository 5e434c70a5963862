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

// TaxRun is a year-end run.
type TaxRun struct {
	TenantID uuid.UUID
	ID       uuid.UUID
	Year     int
	// Minimum is the minimum amount, a decimal in major units.
	Minimum     string
	PeriodStart time.Time
	PeriodEnd   time.Time
	Status      string
	Processed   int
	Total       *int
	Cursor      int64
	Error       string
	CreatedAt   time.Time
	StartedAt   *time.Time
	FinishedAt  *time.Time
}

// ErrLeaseLost is a replica's write to a run whose lease another replica
// has taken: the replica drops its batch and lets the holder go on.
var ErrLeaseLost = errors.New("the run's lease is held by another replica")

const taxRunColumns = `tenant_id, id, year, minimum_amount::text, period_start, period_end, status, processed, total, cursor, error, created_at, started_at, finished_at`

func scanTaxRun(r pgx.Row) (TaxRun, error) {
	var t TaxRun
	err := r.Scan(&t.TenantID, &t.ID, &t.Year, &t.Minimum, &t.PeriodStart, &t.PeriodEnd, &t.Status, &t.Processed, &t.Total, &t.Cursor,
		&t.Error, &t.CreatedAt, &t.StartedAt, &t.FinishedAt)
	if err != nil {
		return t, fmt.Errorf("read tax statement run: %w", db.Interpret(err))
	}
	return t, nil
}

// CreateTaxRun queues a run and writes its audit row.
func (s *Store) CreateTaxRun(ctx context.Context, t TaxRun, actor string) (TaxRun, error) {
	var out TaxRun
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanTaxRun(tx.QueryRow(ctx, `INSERT INTO reports.tax_statement_runs (tenant_id, id, year, minimum_amount, period_start, period_end, actor)
			VALUES ($1, $2, $3, $4::numeric, $5, $6, $7) RETURNING `+taxRunColumns, t.TenantID, t.ID, t.Year, t.Minimum, t.PeriodStart, t.PeriodEnd, actor))
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		return recordTaxRun(ctx, tx, out, audit.Created, "", actor)
	})
	if err != nil {
		return out, fmt.Errorf("reports: create tax statement run: %w", err)
	}
	return out, nil
}

// TaxRun reads a run; db.ErrNotFound when the tenant has no such run.
func (s *Store) TaxRun(ctx context.Context, tenantID, id uuid.UUID) (TaxRun, error) {
	t, err := scanTaxRun(s.pool.QueryRow(ctx, `SELECT `+taxRunColumns+` FROM reports.tax_statement_runs WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return t, fmt.Errorf("reports: get tax statement run %s: %w", id, err)
	}
	return t, nil
}

// ClaimTaxRun gives owner the lease of the oldest unfinished run no live
// lease holds (queued, or running under a lease that ran out: its replica
// stopped), for lease. A queued run becomes running (its audit row says
// so). ok is false when there is none.
func (s *Store) ClaimTaxRun(ctx context.Context, owner string, lease time.Duration) (t TaxRun, ok bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanTaxRun(tx.QueryRow(ctx, `SELECT `+taxRunColumns+` FROM reports.tax_statement_runs
			WHERE status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < now())
			ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`))
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		t, err = scanTaxRun(tx.QueryRow(ctx, `UPDATE reports.tax_statement_runs SET status = 'running', lease_owner = $3,
				lease_until = now() + $4::interval, started_at = coalesce(started_at, now())
			WHERE tenant_id = $1 AND id = $2 RETURNING `+taxRunColumns, cur.TenantID, cur.ID, owner, lease.String()))
		if err != nil {
			return fmt.Errorf("take lease: %w", err)
		}
		ok = true
		if cur.Status == "queued" {
			return recordTaxRun(ctx, tx, t, audit.Updated, cur.Status, "system")
		}
		return nil
	})
	if err != nil {
		return t, false, fmt.Errorf("reports: claim tax statement run: %w", err)
	}
	return t, ok, nil
}

// donorsSQL selects the contacts with standing orders in the run's
// period ($2, $3) whose net total in some currency reaches that
// currency's minimum in minor units ($4 currencies, $5 minima).
const donorsSQL = `SELECT contact_id FROM (
		SELECT contact_id, currency, sum(total_minor - refunded_minor) AS total FROM orders.report_orders_v1
		WHERE tenant_id = $1 AND status IN ('Completed', 'PartiallyRefunded') AND created_at >= $2 AND created_at < $3
		GROUP BY contact_id, currency) per_currency
	JOIN unnest($4::text[], $5::bigint[]) AS m(currency, minimum) USING (currency)
	GROUP BY contact_id HAVING bool_or(total >= minimum)`

// TaxRunCurrencies lists the currencies of the standing orders in the
// run's period, for the minimum of each.
func (s *Store) TaxRunCurrencies(ctx context.Context, t TaxRun) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT DISTINCT currency FROM orders.report_orders_v1
		WHERE tenant_id = $1 AND status IN ('Completed', 'PartiallyRefunded') AND created_at >= $2 AND created_at < $3`, t.TenantID, t.PeriodStart, t.PeriodEnd)
	cur, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reports: currencies of run %s: %w", t.ID, err)
	}
	return cur, nil
}

// Minima are the run's minimum per currency, in each one's minor units.
type Minima struct {
	Currencies []string
	Minor      []int64
}

// CountTaxRunDonors counts the run's donors.
func (s *Store) CountTaxRunDonors(ctx context.Context, t TaxRun, m Minima) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+donorsSQL+`) d`, t.TenantID, t.PeriodStart, t.PeriodEnd, m.Currencies, m.Minor).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reports: count donors of run %s: %w", t.ID, err)
	}
	return n, nil
}

// TaxRunDonors lists up to limit of the run's donors after contact id
// after, by contact id.
func (s *Store) TaxRunDonors(ctx context.Context, t TaxRun, m Minima, after int64, limit int) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT contact_id FROM (`+donorsSQL+`) d WHERE contact_id > $6 ORDER BY contact_id LIMIT $7`,
		t.TenantID, t.PeriodStart, t.PeriodEnd, m.Currencies, m.Minor, after, limit)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reports: donors of run %s: %w", t.ID, err)
	}
	return ids, nil
}

// TaxRunItem is one donor's statement in a run.
type TaxRunItem struct {
	ContactID       int64
	StatementNumber string
	Statement       []byte
}

// SaveTaxRunBatch records a batch of statements, moves the cursor to the
// batch's last contact, counts them, sets the total when given and renews
// owner's lease, in one transaction; ErrLeaseLost when owner no longer
// holds the lease (nothing is written). A donor already recorded is kept
// as it was.
func (s *Store) SaveTaxRunBatch(ctx context.Context, t TaxRun, owner string, items []TaxRunItem, total *int, lease time.Duration) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cursor := t.Cursor
		if len(items) > 0 {
			cursor = items[len(items)-1].ContactID
		}
		tag, err := tx.Exec(ctx, `UPDATE reports.tax_statement_runs SET cursor = $4, processed = processed + $5, total = coalesce($6, total),
				lease_until = now() + $7::interval
			WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status = 'running' AND lease_until > now()`,
			t.TenantID, t.ID, owner, cursor, len(items), total, lease.String())
		if err != nil {
			return fmt.Errorf("move cursor: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrLeaseLost
		}
		b := &pgx.Batch{}
		for _, it := range items {
			b.Queue(`INSERT INTO reports.tax_statement_run_items (tenant_id, run_id, contact_id, statement_number, statement)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, t.TenantID, t.ID, it.ContactID, it.StatementNumber, it.Statement)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("insert statements: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reports: save batch of run %s: %w", t.ID, err)
	}
	return nil
}

// FinishTaxRun ends owner's run as succeeded or failed (with the reason)
// and writes its audit row; ErrLeaseLost when owner no longer holds it.
func (s *Store) FinishTaxRun(ctx context.Context, t TaxRun, owner, status, reason string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out, err := scanTaxRun(tx.QueryRow(ctx, `UPDATE reports.tax_statement_runs SET status = $4, error = $5, finished_at = now(),
				lease_owner = NULL, lease_until = NULL
			WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status = 'running' RETURNING `+taxRunColumns,
			t.TenantID, t.ID, owner, status, reason))
		if errors.Is(err, db.ErrNotFound) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		return recordTaxRun(ctx, tx, out, audit.Updated, "running", "system")
	})
	if err != nil {
		return fmt.Errorf("reports: finish run %s: %w", t.ID, err)
	}
	return nil
}

// TaxRunItems calls fn with each statement of a run, by contact id.
func (s *Store) TaxRunItems(ctx context.Context, tenantID, runID uuid.UUID, fn func(TaxRunItem) error) error {
	rows, _ := s.pool.Query(ctx, `SELECT contact_id, statement_number, statement FROM reports.tax_statement_run_items
		WHERE tenant_id = $1 AND run_id = $2 ORDER BY contact_id`, tenantID, runID)
	var it TaxRunItem
	_, err := pgx.ForEachRow(rows, []any{&it.ContactID, &it.StatementNumber, &it.Statement}, func() error { return fn(it) })
	if err != nil {
		return fmt.Errorf("reports: statements of run %s: %w", runID, err)
	}
	return nil
}

// recordTaxRun writes a run's audit row: Created, or Updated with the
// status change (tax_statement_run.updated on each state change).
func recordTaxRun(ctx context.Context, tx pgx.Tx, t TaxRun, action, oldStatus, actor string) error {
	e := audit.Entry{TenantID: t.TenantID.String(), EntityType: "TaxStatementRun", EntityID: t.ID.String(), Action: action, Actor: actor}
	if action == audit.Updated {
		e.Changes = map[string]audit.Change{"status": {Old: oldStatus, New: t.Status}}
	}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}
