package contacts

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/contacts/store"
)

// directoryServer serves the internal ContactDirectoryService for the
// orders service: whether a contact can take an order, and saving an
// order's address to its contact. The gateway maps none of it.
type directoryServer struct {
	contactsv1.UnimplementedContactDirectoryServiceServer
	s *Service
}

// CheckContact reports whether the contact exists in the tenant and is
// active (a merged contact: whether its survivor is). A contact id that does not exist is an answer, not an error: the
// caller decides how to report it.
func (d *directoryServer) CheckContact(ctx context.Context, req *contactsv1.CheckContactRequest) (*contactsv1.CheckContactResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.OrdersCreate, scopes.ContactsView, scopes.DonationsView)
	if err != nil {
		return nil, err
	}
	out := &contactsv1.CheckContactResponse{}
	if req.GetContactId() <= 0 {
		return out, nil
	}
	// A merged contact answers for its survivor: the orders service
	// records an order for it under the survivor (its redirect), so the
	// order may go ahead whenever the survivor could take it.
	err = d.s.store.Pool().QueryRow(ctx, `SELECT true, coalesce(s.is_active, c.is_active) FROM contacts.contacts c
		LEFT JOIN contacts.contacts s ON s.tenant_id = c.tenant_id AND s.id = c.merged_into
		WHERE c.tenant_id = $1 AND c.id = $2`,
		uuid.MustParse(p.TenantID), req.GetContactId()).Scan(&out.Exists, &out.IsActive)
	if err != nil && !db.IsNoRows(err) {
		return nil, err
	}
	return out, nil
}

var directoryAddressTypes = []string{"Billing", "Shipping"}

// AddContactAddress appends an address to the contact unless an equal one
// (same line 1, city and postal code, letter case ignored) is there. The
// contact's version moves and a Contact Updated audit row is written in the
// same transaction, as for any other change of the contact.
func (d *directoryServer) AddContactAddress(ctx context.Context, req *contactsv1.AddContactAddressRequest) (*contactsv1.AddContactAddressResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.OrdersCreate, scopes.ContactsEdit)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	kind := ""
	for _, k := range directoryAddressTypes {
		if strings.EqualFold(k, req.GetAddressType()) {
			kind = k
		}
	}
	if kind == "" {
		v.Add("AddressType", "'AddressType' must be Billing or Shipping.")
	}
	line1 := strings.TrimSpace(req.GetLine1())
	if line1 == "" {
		v.Add("Line1", "'Line1' must not be empty.")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	country := strings.TrimSpace(req.GetCountry())
	if c, ok := normalize.Country(country); ok {
		country = c
	}
	postal, postalKey, _ := normalize.PostalCode(strings.TrimSpace(req.GetPostalCode()), country)
	nullable := func(s string) *string {
		if s = strings.TrimSpace(s); s == "" {
			return nil
		}
		return &s
	}
	tenant := uuid.MustParse(p.TenantID)
	// The new row's id is set aside before the transaction, which must
	// not wait for a second pooled connection to refill the tenant's
	// block (pkg/counter); unused when the address is there already, it
	// goes back.
	ids, err := d.s.store.IDs().Reserve(ctx, tenant, store.CounterAddress, 1)
	if err != nil {
		return nil, err
	}
	defer ids.Release()
	out := &contactsv1.AddContactAddressResponse{}
	err = db.InTx(ctx, d.s.store.Pool(), func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT true FROM contacts.contacts WHERE tenant_id = $1 AND id = $2 AND merged_into IS NULL FOR UPDATE`, tenant, req.GetContactId()).Scan(&exists); err != nil {
			if db.IsNoRows(err) {
				return apperr.NotFound("Contact")
			}
			return err
		}
		err := tx.QueryRow(ctx, `SELECT id FROM contacts.contact_addresses WHERE tenant_id = $1 AND contact_id = $2
			AND lower(line1) = lower($3) AND coalesce(lower(city), '') = lower($4) AND coalesce(postal_key, '') = $5 LIMIT 1`,
			tenant, req.GetContactId(), line1, strings.TrimSpace(req.GetCity()), postalKey).Scan(&out.AddressId)
		if err == nil {
			return nil
		}
		if !db.IsNoRows(err) {
			return err
		}
		id, err := ids.Next()
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO contacts.contact_addresses (tenant_id, id, contact_id, position, address_type, is_primary,
				line1, line2, city, state_province, postal_code, postal_key, country, name_key)
			SELECT $1, $11, $2, coalesce(max(position) + 1, 0), $3, false, $4, $5, $6, $7, $8, $9, $10,
				(SELECT name_key FROM contacts.contacts WHERE tenant_id = $1 AND id = $2)
			FROM contacts.contact_addresses WHERE tenant_id = $1 AND contact_id = $2
			RETURNING id`, tenant, req.GetContactId(), kind, line1, nullable(req.GetLine2()), nullable(req.GetCity()),
			nullable(req.GetStateProvince()), nullable(postal), nullable(postalKey), nullable(country), id).Scan(&out.AddressId); err != nil {
			return err
		}
		out.Added = true
		if _, err := tx.Exec(ctx, `UPDATE contacts.contacts SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
			tenant, req.GetContactId()); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: store.EntityType, EntityID: store.EntityID(req.GetContactId()),
			Action: audit.Updated, Changes: map[string]audit.Change{"addresses": {Old: nil, New: map[string]any{"id": out.AddressId, "addressType": kind, "line1": line1}}},
			Actor: p.Actor()})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
