package cohorts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Cohort is a saved cohort.
type Cohort struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	Name        string
	Description string
	Definition  json.RawMessage
	Refs        []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Store reads and writes reports.cohorts and evaluates cohorts over the
// views contacts and orders publish.
type Store struct {
	// pool serves the cohorts' CRUD, which reads its own writes.
	pool *pgxpool.Pool
	// reads serves the members, counts and exports: a read replica within
	// its lag bound, else pool (docs/scaling.md).
	reads *db.ReadPool
}

// NewStore returns the store on pool, evaluating cohorts on pool too.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, reads: db.NewReadPool(pool)} }

// WithReads has the members, counts and exports read through reads (nil:
// the primary); it returns s. A saved cohort's definition is still read
// from the primary: an edit shows at once in the next count.
func (s *Store) WithReads(reads *db.ReadPool) *Store {
	if reads != nil {
		s.reads = reads
	}
	return s
}

const cohortColumns = `tenant_id, id, name, description, definition, refs, created_at, updated_at`

func scanCohort(row pgx.Row) (Cohort, error) {
	var c Cohort
	err := row.Scan(&c.TenantID, &c.ID, &c.Name, &c.Description, &c.Definition, &c.Refs, &c.CreatedAt, &c.UpdatedAt)
	if err != nil {
		return c, db.Interpret(err)
	}
	return c, nil
}

func (c Cohort) snapshot() map[string]any {
	return map[string]any{"name": c.Name, "description": c.Description, "definition": json.RawMessage(c.Definition)}
}

func record(ctx context.Context, tx pgx.Tx, c Cohort, action string, changes map[string]audit.Change, actor string) error {
	e := audit.Entry{TenantID: c.TenantID.String(), EntityType: "Cohort", EntityID: c.ID.String(), Action: action, Actor: actor, Changes: changes}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

var errNameTaken = apperr.FieldRule("Cohort.NameTaken", "Name", "Another cohort of the tenant has this name.")

// Create saves a cohort with its audit row.
func (s *Store) Create(ctx context.Context, c Cohort, actor string) (Cohort, error) {
	var out Cohort
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanCohort(tx.QueryRow(ctx, `INSERT INTO reports.cohorts (tenant_id, id, name, description, definition, refs)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+cohortColumns, c.TenantID, c.ID, c.Name, c.Description, c.Definition, c.Refs))
		if err != nil {
			return err
		}
		return record(ctx, tx, out, audit.Created, nil, actor)
	})
	if errors.Is(err, db.ErrUniqueViolation) {
		return out, errNameTaken
	}
	if err != nil {
		return out, fmt.Errorf("cohorts: create: %w", err)
	}
	return out, nil
}

// Get reads a saved cohort; db.ErrNotFound for another tenant's.
func (s *Store) Get(ctx context.Context, tenant, id uuid.UUID) (Cohort, error) {
	c, err := scanCohort(s.pool.QueryRow(ctx, `SELECT `+cohortColumns+` FROM reports.cohorts WHERE tenant_id = $1 AND id = $2`, tenant, id))
	if err != nil {
		return c, fmt.Errorf("cohorts: get %s: %w", id, err)
	}
	return c, nil
}

// List reads the tenant's saved cohorts by name.
func (s *Store) List(ctx context.Context, tenant uuid.UUID) ([]Cohort, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+cohortColumns+` FROM reports.cohorts WHERE tenant_id = $1 ORDER BY lower(name), id`, tenant)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Cohort, error) { return scanCohort(r) })
	if err != nil {
		return nil, fmt.Errorf("cohorts: list: %w", err)
	}
	return out, nil
}

// Update replaces a cohort's name, description and definition with its
// audit row (none when nothing changed).
func (s *Store) Update(ctx context.Context, c Cohort, actor string) (Cohort, error) {
	var out Cohort
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := scanCohort(tx.QueryRow(ctx, `SELECT `+cohortColumns+` FROM reports.cohorts WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
			c.TenantID, c.ID))
		if err != nil {
			return err
		}
		out, err = scanCohort(tx.QueryRow(ctx, `UPDATE reports.cohorts SET name = $3, description = $4, definition = $5, refs = $6,
				updated_at = CASE WHEN (name, description, definition) IS DISTINCT FROM ($3, $4, $5::jsonb) THEN now() ELSE updated_at END
			WHERE tenant_id = $1 AND id = $2 RETURNING `+cohortColumns, c.TenantID, c.ID, c.Name, c.Description, c.Definition, c.Refs))
		if err != nil {
			return err
		}
		changes := audit.Diff(before.snapshot(), out.snapshot())
		if len(changes) == 0 {
			return nil
		}
		return record(ctx, tx, out, audit.Updated, changes, actor)
	})
	if errors.Is(err, db.ErrUniqueViolation) {
		return out, errNameTaken
	}
	if err != nil {
		return out, fmt.Errorf("cohorts: update %s: %w", c.ID, err)
	}
	return out, nil
}

// Delete deletes a cohort with its audit row; one another cohort refers
// to is refused.
func (s *Store) Delete(ctx context.Context, tenant, id uuid.UUID, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var user string
		err := tx.QueryRow(ctx, `SELECT name FROM reports.cohorts WHERE tenant_id = $1 AND $2 = ANY(refs) AND id <> $3::uuid LIMIT 1`,
			tenant, id.String(), id).Scan(&user)
		if err == nil {
			return apperr.Rule("Cohort.InUse", fmt.Sprintf("The cohort %q refers to this cohort: change it first.", user))
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		c, err := scanCohort(tx.QueryRow(ctx, `DELETE FROM reports.cohorts WHERE tenant_id = $1 AND id = $2 RETURNING `+cohortColumns, tenant, id))
		if err != nil {
			return err
		}
		return record(ctx, tx, c, audit.Deleted, nil, actor)
	})
	if err != nil {
		return fmt.Errorf("cohorts: delete %s: %w", id, err)
	}
	return nil
}

// RollingFrom reads the start of the tenant's rolling giving window
// (orders.report_giving_rolling_v1; zero when it has none), for its
// calendar (Calendar.RollingFrom).
func (s *Store) RollingFrom(ctx context.Context, tenant uuid.UUID) (time.Time, error) {
	var from time.Time
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		err := p.QueryRow(ctx, `SELECT from_at FROM orders.report_giving_rolling_v1 WHERE tenant_id = $1`, tenant).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("cohorts: rolling window of %s: %w", tenant, err)
	}
	return from, nil
}
