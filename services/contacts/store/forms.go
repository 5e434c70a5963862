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

// FormSubmission is a row of contact_form_submissions.
type FormSubmission struct {
	ID           uuid.UUID
	Name         string
	Email        string
	Organization string
	Phone        string
	Message      string
	ClientIP     string
	CreatedAt    time.Time
}

// FormEntityType is the audit entity type of a form post.
const FormEntityType = "ContactFormSubmission"

// PlatformTenant is the audit log's tenant for rows that belong to no
// tenant (the public contact form): the nil UUID, which no tenant has.
var PlatformTenant = uuid.Nil

// FormActor is the audit actor of an anonymous form post.
const FormActor = "anonymous"

const formColumns = `id, name, email, organization, phone, message, client_ip, created_at`

func scanForm(row pgx.Row) (FormSubmission, error) {
	var f FormSubmission
	var org, phone *string
	err := row.Scan(&f.ID, &f.Name, &f.Email, &org, &phone, &f.Message, &f.ClientIP, &f.CreatedAt)
	if err != nil {
		return FormSubmission{}, fmt.Errorf("read form submission: %w", db.Interpret(err))
	}
	f.Organization, f.Phone = deref(org), deref(phone)
	return f, nil
}

// CreateFormSubmission stores a form post and its audit row.
func (s *Store) CreateFormSubmission(ctx context.Context, f FormSubmission) (FormSubmission, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return FormSubmission{}, fmt.Errorf("contacts: create form submission: %w", err)
	}
	var out FormSubmission
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		out, err = scanForm(tx.QueryRow(ctx, `
			INSERT INTO contacts.contact_form_submissions (id, name, email, organization, phone, message, client_ip)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+formColumns,
			id, f.Name, f.Email, nullable(f.Organization), nullable(f.Phone), f.Message, f.ClientIP))
		if err != nil {
			return fmt.Errorf("insert form submission: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: PlatformTenant.String(), EntityType: FormEntityType, EntityID: id.String(),
			Action: audit.Created, Actor: FormActor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return FormSubmission{}, fmt.Errorf("contacts: create form submission: %w", err)
	}
	return out, nil
}

// ListFormSubmissions returns up to limit posts older than before (uuid.Nil:
// the newest), newest first.
func (s *Store) ListFormSubmissions(ctx context.Context, before uuid.UUID, limit int) ([]FormSubmission, error) {
	cond, args := "", []any{limit}
	if before != uuid.Nil {
		cond, args = "WHERE id < $2", append(args, before)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+formColumns+` FROM contacts.contact_form_submissions `+cond+` ORDER BY id DESC LIMIT $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("contacts: list form submissions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FormSubmission, error) { return scanForm(r) })
	if err != nil {
		return nil, fmt.Errorf("contacts: list form submissions: %w", err)
	}
	return out, nil
}
