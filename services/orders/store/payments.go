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

// NextOrderNumber takes the tenant's next order number ahead of the order
// (an order charged at a processor names its number in the charge).
func (s *Store) NextOrderNumber(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	n, err := s.nextOrderNumber(ctx, tenantID)
	if err != nil {
		return 0, fmt.Errorf("orders: next order number: %w", err)
	}
	return n, nil
}

// PaymentMethod is a saved card or bank account of a contact.
type PaymentMethod struct {
	TenantID   uuid.UUID
	ID         string
	ContactID  int64
	Provider   string
	Mode       string
	CustomerID string
	Type       string
	Brand      string
	Last4      string
	ExpMonth   int32
	ExpYear    int32
	IsDefault  bool
	CreatedAt  time.Time
}

const methodColumns = `tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4, exp_month, exp_year, is_default, created_at`

func scanMethod(row pgx.Row) (PaymentMethod, error) {
	var m PaymentMethod
	err := row.Scan(&m.TenantID, &m.ID, &m.ContactID, &m.Provider, &m.Mode, &m.CustomerID, &m.Type, &m.Brand, &m.Last4,
		&m.ExpMonth, &m.ExpYear, &m.IsDefault, &m.CreatedAt)
	if err != nil {
		return PaymentMethod{}, fmt.Errorf("read payment method: %w", db.Interpret(err))
	}
	return m, nil
}

// queueSaveMethod saves a method with the order that attached it. A method
// saved again (a second order with the same card) is attached again if it
// had been detached; the contact's first active method is its default.
func queueSaveMethod(b *pgx.Batch, m PaymentMethod) {
	b.Queue(`WITH c AS (SELECT `+contactForWrite("$1", "$3::bigint")+` AS id)
		INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4, exp_month, exp_year, is_default)
		SELECT $1, $2, c.id, $4, $5, $6, $7, $8, $9, $10, $11,
			NOT EXISTS (SELECT 1 FROM orders.payment_methods WHERE tenant_id = $1 AND contact_id = c.id AND detached_at IS NULL)
		FROM c
		ON CONFLICT (tenant_id, id) DO UPDATE SET detached_at = NULL, customer_id = EXCLUDED.customer_id`,
		m.TenantID, m.ID, m.ContactID, m.Provider, m.Mode, m.CustomerID, m.Type, m.Brand, m.Last4, m.ExpMonth, m.ExpYear)
}

// KnownMethod is a method the tenant has saved, detached or not.
type KnownMethod struct {
	PaymentMethod
	Detached bool
}

// SavedFor reports whether the method is saved (not detached) at the
// processor provider for contactID: what SavedMethod answers.
func (m KnownMethod) SavedFor(provider string, contactID int64) bool {
	return !m.Detached && m.Provider == provider && m.ContactID == contactID
}

// KnownMethods reads, in one round trip, each of ids that the tenant has
// ever saved (detached too: a detached method still names whose card it
// was), by id. A token never saved in the tenant is absent. An order, and
// the recurring runner for an installment, read their tokens once with
// it, for the owner check (a method saved for another contact is refused)
// and the customer the charges go with (SavedFor).
func (s *Store) KnownMethods(ctx context.Context, tenantID uuid.UUID, ids []string) (map[string]KnownMethod, error) {
	out := map[string]KnownMethod{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+methodColumns+`, detached_at IS NOT NULL FROM orders.payment_methods
		WHERE tenant_id = $1 AND id = ANY($2)`, tenantID, ids)
	if err != nil {
		return nil, fmt.Errorf("orders: read payment methods: %w", err)
	}
	var m KnownMethod
	_, err = pgx.ForEachRow(rows, []any{&m.TenantID, &m.ID, &m.ContactID, &m.Provider, &m.Mode, &m.CustomerID, &m.Type, &m.Brand, &m.Last4,
		&m.ExpMonth, &m.ExpYear, &m.IsDefault, &m.CreatedAt, &m.Detached}, func() error {
		out[m.ID] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("orders: read payment methods: %w", err)
	}
	return out, nil
}

// ListPaymentMethods returns a contact's saved methods, oldest first.
func (s *Store) ListPaymentMethods(ctx context.Context, tenantID uuid.UUID, contactID int64) ([]PaymentMethod, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
		WHERE tenant_id = $1 AND contact_id = $2 AND detached_at IS NULL ORDER BY created_at, id`, tenantID, contactID)
	if err != nil {
		return nil, fmt.Errorf("orders: list payment methods: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentMethod, error) { return scanMethod(r) })
	if err != nil {
		return nil, fmt.Errorf("orders: list payment methods: %w", err)
	}
	return list, nil
}

// GetPaymentMethod reads one saved (not detached) method.
func (s *Store) GetPaymentMethod(ctx context.Context, tenantID uuid.UUID, id string) (PaymentMethod, error) {
	m, err := scanMethod(s.pool.QueryRow(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
		WHERE tenant_id = $1 AND id = $2 AND detached_at IS NULL`, tenantID, id))
	if err != nil {
		return PaymentMethod{}, fmt.Errorf("orders: get payment method %s: %w", id, err)
	}
	return m, nil
}

// ContactMethod reads a contact's saved (not detached) method.
func (s *Store) ContactMethod(ctx context.Context, tenantID uuid.UUID, contactID int64, id string) (PaymentMethod, error) {
	m, err := scanMethod(s.pool.QueryRow(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
		WHERE tenant_id = $1 AND contact_id = $2 AND id = $3 AND detached_at IS NULL`, tenantID, contactID, id))
	if err != nil {
		return PaymentMethod{}, fmt.Errorf("orders: get payment method %s: %w", id, err)
	}
	return m, nil
}

// MarkMethodDetached marks a contact's method detached, once the
// processor let go of it, with its audit row; the default passes to the
// contact's oldest remaining method (the survivor's, when a merge moved
// it meanwhile). A method detached meanwhile (a second request) is left
// as it is.
//
// The contact's lock (contactForWrite, shared) comes first, as for every
// write of a contact's rows: a merge of the contact then waits for the
// whole detach. Locking only the method deadlocked with a merge that,
// holding the contact's lock, had locked the other method and waited for
// this one, while the detach passed the default to that other method.
func (s *Store) MarkMethodDetached(ctx context.Context, tenantID uuid.UUID, contactID int64, id, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// A merge that committed since the method was read moved it to
		// the survivor: it is the survivor's method that is detached.
		if err := tx.QueryRow(ctx, `SELECT `+contactForWrite("$1", "$2::bigint"), tenantID, contactID).Scan(&contactID); err != nil {
			return fmt.Errorf("lock the contact: %w", err)
		}
		m, err := scanMethod(tx.QueryRow(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
			WHERE tenant_id = $1 AND contact_id = $2 AND id = $3 AND detached_at IS NULL FOR UPDATE`, tenantID, contactID, id))
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock payment method: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE orders.payment_methods SET detached_at = now(), is_default = false WHERE tenant_id = $1 AND id = $2`, tenantID, id); err != nil {
			return fmt.Errorf("mark payment method detached: %w", err)
		}
		if m.IsDefault {
			if _, err := tx.Exec(ctx, `UPDATE orders.payment_methods SET is_default = true WHERE tenant_id = $1 AND id = (
					SELECT id FROM orders.payment_methods WHERE tenant_id = $1 AND contact_id = $2 AND detached_at IS NULL ORDER BY created_at, id LIMIT 1)`,
				tenantID, contactID); err != nil {
				return fmt.Errorf("move default payment method: %w", err)
			}
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityPaymentMethod, EntityID: id, Action: audit.Deleted, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("orders: detach payment method %s: %w", id, err)
	}
	return nil
}

// Customer returns the processor customer of a contact, if one was made.
func (s *Store) Customer(ctx context.Context, tenantID uuid.UUID, contactID int64, provider, mode string) (string, bool, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT customer_id FROM orders.processor_customers
		WHERE tenant_id = $1 AND contact_id = $2 AND provider = $3 AND mode = $4`, tenantID, contactID, provider, mode).Scan(&id)
	if db.IsNoRows(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("orders: read processor customer: %w", err)
	}
	return id, true, nil
}

// SaveCustomer keeps a contact's processor customer and returns the one
// kept: when two requests made one at once, the first saved wins (both
// made the same one anyway: its creation is idempotent by contact).
func (s *Store) SaveCustomer(ctx context.Context, tenantID uuid.UUID, contactID int64, provider, mode, customerID string) (string, error) {
	var kept string
	err := s.pool.QueryRow(ctx, `INSERT INTO orders.processor_customers (tenant_id, contact_id, provider, mode, customer_id)
		VALUES ($1, `+contactForWrite("$1", "$2")+`, $3, $4, $5)
		ON CONFLICT (tenant_id, contact_id, provider, mode) DO UPDATE SET customer_id = orders.processor_customers.customer_id
		RETURNING customer_id`, tenantID, contactID, provider, mode, customerID).Scan(&kept)
	if err != nil {
		return "", fmt.Errorf("orders: save processor customer: %w", err)
	}
	return kept, nil
}

// SavedMethod returns the method a token names when it is saved (not
// detached) at the processor provider for contactID. Not saved is not an
// error; a failed read is.
func (s *Store) SavedMethod(ctx context.Context, tenantID uuid.UUID, token, provider string, contactID int64) (PaymentMethod, bool, error) {
	m, err := s.GetPaymentMethod(ctx, tenantID, token)
	if errors.Is(err, db.ErrNotFound) {
		return PaymentMethod{}, false, nil
	}
	if err != nil {
		return PaymentMethod{}, false, err
	}
	return m, m.Provider == provider && m.ContactID == contactID, nil
}
