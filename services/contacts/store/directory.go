package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// OrderTarget is what the orders service learns of a contact it is about
// to record an order for.
type OrderTarget struct {
	Exists   bool
	IsActive bool
	// Merged is set when the contact was merged into another.
	Merged bool
}

// CheckOrderTarget reports whether contact id exists in the tenant and
// whether it (a merged contact: its survivor) is active. A merged contact
// answers for its survivor because the orders service records the order
// under the survivor (its redirect). A missing contact is an answer, not
// an error.
func (s *Store) CheckOrderTarget(ctx context.Context, tenant uuid.UUID, id int64) (OrderTarget, error) {
	var t OrderTarget
	err := s.pool.QueryRow(ctx, `SELECT true, coalesce(s.is_active, c.is_active), c.merged_into IS NOT NULL FROM contacts.contacts c
		LEFT JOIN contacts.contacts s ON s.tenant_id = c.tenant_id AND s.id = c.merged_into
		WHERE c.tenant_id = $1 AND c.id = $2`, tenant, id).Scan(&t.Exists, &t.IsActive, &t.Merged)
	if err != nil && !db.IsNoRows(err) {
		return OrderTarget{}, fmt.Errorf("contacts: check order target: %w", err)
	}
	return t, nil
}

// OrderAddress is an order's billing or shipping address to keep on its
// contact. Optional parts are nil when empty.
type OrderAddress struct {
	Type               string // Billing or Shipping
	Line1              string
	Line2, City, State *string
	PostalCode         *string
	PostalKey          string // the normalized postal code the match uses
	Country            *string
}

// AddOrderAddress appends a to the contact unless an equal address (same
// line 1, city and postal code, letter case ignored) is there, and returns
// the address's id and whether it was added. An added address moves the
// contact's version and writes its Contact Updated audit row in the same
// transaction. ids supplies the new row's id (set aside by the caller
// before the transaction, so it never waits for a second connection).
func (s *Store) AddOrderAddress(ctx context.Context, tenant uuid.UUID, contactID int64, a OrderAddress, ids IDSource, actor string) (id int64, added bool, err error) {
	// One attempt only: ids holds one id, which a retry could not reuse.
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockLiveContact(ctx, tx, tenant, contactID); err != nil {
			return err
		}
		found, err := findOrderAddress(ctx, tx, tenant, contactID, a)
		if err != nil || found != 0 {
			id = found
			return err
		}
		if id, err = insertOrderAddress(ctx, tx, tenant, contactID, a, ids); err != nil {
			return err
		}
		added = true
		return recordAddressAdded(ctx, tx, tenant, contactID, id, a, actor)
	})
	return id, added, err
}

// IDSource hands out ids set aside for one transaction.
type IDSource interface {
	Next() (int64, error)
}

func lockLiveContact(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, id int64) error {
	var exists bool
	err := tx.QueryRow(ctx, `SELECT true FROM contacts.contacts WHERE tenant_id = $1 AND id = $2 AND merged_into IS NULL FOR UPDATE`,
		tenant, id).Scan(&exists)
	if db.IsNoRows(err) {
		return apperr.NotFound("Contact")
	}
	if err != nil {
		return fmt.Errorf("contacts: lock contact: %w", err)
	}
	return nil
}

// findOrderAddress returns the id of the contact's address equal to a, or 0.
func findOrderAddress(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, contactID int64, a OrderAddress) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM contacts.contact_addresses WHERE tenant_id = $1 AND contact_id = $2
		AND lower(line1) = lower($3) AND coalesce(lower(city), '') = lower($4) AND coalesce(postal_key, '') = $5 LIMIT 1`,
		tenant, contactID, a.Line1, deref(a.City), a.PostalKey).Scan(&id)
	if db.IsNoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("contacts: find address: %w", err)
	}
	return id, nil
}

func insertOrderAddress(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, contactID int64, a OrderAddress, ids IDSource) (int64, error) {
	id, err := ids.Next()
	if err != nil {
		return 0, err
	}
	var postalKey *string
	if a.PostalKey != "" {
		postalKey = &a.PostalKey
	}
	if _, err := tx.Exec(ctx, `INSERT INTO contacts.contact_addresses (tenant_id, id, contact_id, position, address_type, is_primary,
			line1, line2, city, state_province, postal_code, postal_key, country, name_key)
		SELECT $1, $11, $2, coalesce(max(position) + 1, 0), $3, false, $4, $5, $6, $7, $8, $9, $10,
			(SELECT name_key FROM contacts.contacts WHERE tenant_id = $1 AND id = $2)
		FROM contacts.contact_addresses WHERE tenant_id = $1 AND contact_id = $2`,
		tenant, contactID, a.Type, a.Line1, a.Line2, a.City, a.State, a.PostalCode, postalKey, a.Country, id); err != nil {
		return 0, fmt.Errorf("contacts: add address: %w", err)
	}
	return id, nil
}

func recordAddressAdded(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, contactID, addressID int64, a OrderAddress, actor string) error {
	if _, err := tx.Exec(ctx, `UPDATE contacts.contacts SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
		tenant, contactID); err != nil {
		return fmt.Errorf("contacts: move contact version: %w", err)
	}
	return audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: EntityType, EntityID: EntityID(contactID),
		Action: audit.Updated, Actor: actor,
		Changes: map[string]audit.Change{"addresses": {Old: nil, New: map[string]any{"id": addressID, "addressType": a.Type, "line1": a.Line1}}}})
}
