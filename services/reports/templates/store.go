package templates

import (
	"context"
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

// Template is a stored document template.
type Template struct {
	TenantID  uuid.UUID
	ID        uuid.UUID
	Kind      string
	Name      string
	Subject   string
	Body      string
	Format    string
	IsDefault bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (t Template) snapshot() map[string]any {
	return map[string]any{"kind": t.Kind, "name": t.Name, "subject": t.Subject, "body": t.Body, "format": t.Format, "isDefault": t.IsDefault}
}

// Store reads and writes reports.document_templates.
type Store struct{ pool *pgxpool.Pool }

// NewStore returns the templates store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = `tenant_id, id, kind, name, subject, body, format, is_default, created_at, updated_at`

func scan(r pgx.Row) (Template, error) {
	var t Template
	err := r.Scan(&t.TenantID, &t.ID, &t.Kind, &t.Name, &t.Subject, &t.Body, &t.Format, &t.IsDefault, &t.CreatedAt, &t.UpdatedAt)
	if err != nil {
		return t, fmt.Errorf("read template: %w", db.Interpret(err))
	}
	return t, nil
}

// ensureDefaults makes the tenant's default templates it does not have
// yet (the first read of any tenant's templates).
func (s *Store) ensureDefaults(ctx context.Context, tenant uuid.UUID) error {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM reports.document_templates WHERE tenant_id = $1 AND is_default`, tenant).Scan(&n); err != nil {
		return fmt.Errorf("templates: count defaults: %w", err)
	}
	if n == len(Defaults) {
		return nil
	}
	return db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, d := range Defaults {
			id, err := uuid.NewV7()
			if err != nil {
				return err
			}
			t, err := scan(tx.QueryRow(ctx, `INSERT INTO reports.document_templates (tenant_id, id, kind, name, subject, body, format, is_default)
				VALUES ($1, $2, $3, $4, $5, $6, $7, true) ON CONFLICT (tenant_id, kind) WHERE is_default DO NOTHING RETURNING `+columns,
				tenant, id, d.Kind, d.Name, d.Subject, d.Body, d.Format))
			if errors.Is(err, db.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if err := record(ctx, tx, t, audit.Created, nil, "system"); err != nil {
				return err
			}
		}
		return nil
	})
}

// List reads the tenant's templates (of one kind when kind is set),
// defaults first, then by name.
func (s *Store) List(ctx context.Context, tenant uuid.UUID, kind string) ([]Template, error) {
	if err := s.ensureDefaults(ctx, tenant); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+columns+` FROM reports.document_templates
		WHERE tenant_id = $1 AND ($2 = '' OR kind = $2) ORDER BY is_default DESC, kind, name, id`, tenant, kind)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Template, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("templates: list: %w", err)
	}
	return out, nil
}

// Get reads one template; db.ErrNotFound when the tenant has no such one.
func (s *Store) Get(ctx context.Context, tenant, id uuid.UUID) (Template, error) {
	if err := s.ensureDefaults(ctx, tenant); err != nil {
		return Template{}, err
	}
	t, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM reports.document_templates WHERE tenant_id = $1 AND id = $2`, tenant, id))
	if err != nil {
		return t, fmt.Errorf("templates: get %s: %w", id, err)
	}
	return t, nil
}

// Default reads the tenant's default template of kind.
func (s *Store) Default(ctx context.Context, tenant uuid.UUID, kind string) (Template, error) {
	if err := s.ensureDefaults(ctx, tenant); err != nil {
		return Template{}, err
	}
	t, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM reports.document_templates
		WHERE tenant_id = $1 AND kind = $2 AND is_default`, tenant, kind))
	if err != nil {
		return t, fmt.Errorf("templates: default %s: %w", kind, err)
	}
	return t, nil
}

// Create saves a new template with its audit row.
func (s *Store) Create(ctx context.Context, t Template, actor string) (Template, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return t, err
	}
	var out Template
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		out, err = scan(tx.QueryRow(ctx, `INSERT INTO reports.document_templates (tenant_id, id, kind, name, subject, body, format)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+columns, t.TenantID, id, t.Kind, t.Name, t.Subject, t.Body, t.Format))
		if err != nil {
			return err
		}
		return record(ctx, tx, out, audit.Created, nil, actor)
	})
	if err != nil {
		return out, fmt.Errorf("templates: create: %w", err)
	}
	return out, nil
}

// Update replaces a template's name, subject, body and format with its
// audit row (none when nothing changed); db.ErrNotFound for another
// tenant's.
func (s *Store) Update(ctx context.Context, t Template, actor string) (Template, error) {
	var out Template
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		old, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM reports.document_templates WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, t.TenantID, t.ID))
		if err != nil {
			return err
		}
		t.Kind, t.IsDefault = old.Kind, old.IsDefault
		changes := audit.Diff(old.snapshot(), t.snapshot())
		if changes == nil {
			out = old
			return nil
		}
		out, err = scan(tx.QueryRow(ctx, `UPDATE reports.document_templates SET name = $3, subject = $4, body = $5, format = $6, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+columns, t.TenantID, t.ID, t.Name, t.Subject, t.Body, t.Format))
		if err != nil {
			return err
		}
		return record(ctx, tx, out, audit.Updated, changes, actor)
	})
	if err != nil {
		return out, fmt.Errorf("templates: update %s: %w", t.ID, err)
	}
	return out, nil
}

// Delete removes a template with its audit row. A default is refused,
// and so is one a queued or running letter run uses (inUse says which
// runs do, under the same lock).
func (s *Store) Delete(ctx context.Context, tenant, id uuid.UUID, actor string, inUse func(pgx.Tx) (bool, error)) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM reports.document_templates WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id))
		if err != nil {
			return err
		}
		if t.IsDefault {
			return apperr.Invalid(apperr.Violation{Field: "TemplateId", Message: "A default template can be edited but not deleted."})
		}
		if used, err := inUse(tx); err != nil || used {
			if err == nil {
				err = apperr.Invalid(apperr.Violation{Field: "TemplateId", Message: "A queued letter run uses this template; delete it once the run has finished."})
			}
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM reports.document_templates WHERE tenant_id = $1 AND id = $2`, tenant, id); err != nil {
			return err
		}
		return record(ctx, tx, t, audit.Deleted, nil, actor)
	})
	if err != nil {
		return fmt.Errorf("templates: delete %s: %w", id, err)
	}
	return nil
}

func record(ctx context.Context, tx pgx.Tx, t Template, action string, changes map[string]audit.Change, actor string) error {
	e := audit.Entry{TenantID: t.TenantID.String(), EntityType: "DocumentTemplate", EntityID: t.ID.String(), Action: action, Actor: actor, Changes: changes}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}
