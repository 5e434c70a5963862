package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// update is one existing contact an import batch changes: its new names,
// external id and tags, and the rows it gains (after its existing ones).
type update struct {
	id     int64
	fields Fields
	// next*Position is the position after the contact's last row.
	nextPhone, nextEmail, nextAddress int16
}

// planUpdates locks the contacts the batch updates (in id order, as every
// multi-contact write does), reads what they have, and folds the batch's
// rows into them. Contacts the rows leave as they were are left out.
func planUpdates(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, p *plan) ([]*update, error) {
	if len(p.updateOrder) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, contact_type, first_name, last_name, organization_name, external_id, tags
		FROM contacts.contacts WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`, tenant, p.updateOrder)
	if err != nil {
		return nil, fmt.Errorf("lock updated contacts: %w", err)
	}
	byID := make(map[int64]*update, len(p.updateOrder))
	have := make(map[int64]*existingKeys, len(p.updateOrder))
	var (
		u                     update
		first, last, org, ext *string
	)
	if _, err := pgx.ForEachRow(rows, []any{&u.id, &u.fields.Type, &first, &last, &org, &ext, &u.fields.Tags}, func() error {
		c := u
		c.fields.FirstName, c.fields.LastName, c.fields.OrganizationName, c.fields.ExternalID = deref(first), deref(last), deref(org), deref(ext)
		byID[c.id] = &c
		have[c.id] = &existingKeys{emails: map[string]bool{}, phones: map[string]bool{}, addresses: map[string]bool{}}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lock updated contacts: %w", err)
	}
	if err := readExistingKeys(ctx, tx, tenant, p.updateOrder, byID, have); err != nil {
		return nil, err
	}
	var out []*update
	for _, id := range p.updateOrder {
		u, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("updated contact %d is gone", id)
		}
		changed := false
		for _, row := range p.updates[id] {
			if foldInto(&u.fields, row, have[id]) {
				changed = true
			}
		}
		if changed {
			out = append(out, u)
		}
	}
	return out, nil
}

// readExistingKeys fills have with the keys of the contacts' rows, and
// each update's next positions.
func readExistingKeys(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, ids []int64, byID map[int64]*update, have map[int64]*existingKeys) error {
	rows, err := tx.Query(ctx, `
		SELECT 'e', contact_id, email_key, '', '', position FROM contacts.contact_emails WHERE tenant_id = $1 AND contact_id = ANY($2)
		UNION ALL
		SELECT 'p', contact_id, phone_key, '', '', position FROM contacts.contact_phones WHERE tenant_id = $1 AND contact_id = ANY($2)
		UNION ALL
		SELECT 'a', contact_id, line1, coalesce(postal_key, ''), coalesce(country, ''), position
		FROM contacts.contact_addresses WHERE tenant_id = $1 AND contact_id = ANY($2)`, tenant, ids)
	if err != nil {
		return fmt.Errorf("read rows of updated contacts: %w", err)
	}
	var (
		kind, key, postal, country string
		id                         int64
		pos                        int16
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &id, &key, &postal, &country, &pos}, func() error {
		u, k := byID[id], have[id]
		switch kind {
		case "e":
			k.emails[key], u.nextEmail = true, max(u.nextEmail, pos+1)
		case "p":
			k.phones[key], u.nextPhone = true, max(u.nextPhone, pos+1)
		default:
			k.addresses[addressKey(Address{Line1: key, PostalKey: postal, Country: country})], u.nextAddress = true, max(u.nextAddress, pos+1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read rows of updated contacts: %w", err)
	}
	return nil
}

// bulkWrite holds the ids a batch takes and the rows it inserts.
type bulkWrite struct {
	tenant, importID pgtype.UUID
	contactIDs       []int64
	phones, emails   [][]any
	addresses        [][]any
}

// takeIDs numbers the new contacts and the new phone, email and address
// rows from the tenant's counters (migrations 00003), inside the batch's
// transaction: the counts are only known here, and a dry run's rollback
// gives the numbers back. The statement is pkg/counter's reservation; the
// counter rows stay locked until commit, which other writers of the tenant
// wait for only when their block runs out.
func (w *bulkWrite) takeIDs(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, p *plan, upd []*update) error {
	var nPhone, nEmail, nAddress int
	for _, f := range p.creates {
		nPhone, nEmail, nAddress = nPhone+len(f.Phones), nEmail+len(f.Emails), nAddress+len(f.Addresses)
	}
	for _, u := range upd {
		nPhone, nEmail, nAddress = nPhone+len(u.fields.Phones), nEmail+len(u.fields.Emails), nAddress+len(u.fields.Addresses)
	}
	var firstContact, firstPhone, firstEmail, firstAddress int64
	for _, c := range []struct {
		name  string
		n     int
		first *int64
	}{{CounterContact, len(p.creates), &firstContact}, {CounterPhone, nPhone, &firstPhone}, {CounterEmail, nEmail, &firstEmail}, {CounterAddress, nAddress, &firstAddress}} {
		if c.n == 0 {
			continue
		}
		var last int64
		if err := tx.QueryRow(ctx, `INSERT INTO `+CounterTable+` AS c (tenant_id, name, last_value) VALUES ($1, $2, $3)
			ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = c.last_value + excluded.last_value
			RETURNING last_value`, tenant, c.name, c.n).Scan(&last); err != nil {
			return fmt.Errorf("take %d %s ids: %w", c.n, c.name, err)
		}
		*c.first = last - int64(c.n) + 1
	}
	w.contactIDs = make([]int64, len(p.creates))
	for i := range p.creates {
		w.contactIDs[i] = firstContact + int64(i)
	}
	next := func(n *int64) int64 { id := *n; *n++; return id }
	for i, f := range p.creates {
		w.addRows(w.contactIDs[i], *f, 0, 0, 0, &firstPhone, &firstEmail, &firstAddress, next)
	}
	for _, u := range upd {
		w.addRows(u.id, u.fields, u.nextPhone, u.nextEmail, u.nextAddress, &firstPhone, &firstEmail, &firstAddress, next)
	}
	return nil
}

// addRows queues the phone, email and address rows of f for contact id,
// positioned after the contact's existing ones.
func (w *bulkWrite) addRows(id int64, f Fields, posPhone, posEmail, posAddress int16, phoneID, emailID, addressID *int64, next func(*int64) int64) {
	for i, p := range f.Phones {
		w.phones = append(w.phones, []any{w.tenant, next(phoneID), id, posPhone + int16(i), p.Number, p.Key, p.Type, p.IsPrimary})
	}
	for i, e := range f.Emails {
		w.emails = append(w.emails, []any{w.tenant, next(emailID), id, posEmail + int16(i), e.Address, e.Key, e.Type, e.IsPrimary})
	}
	for i, a := range f.Addresses {
		w.addresses = append(w.addresses, []any{w.tenant, next(addressID), id, posAddress + int16(i), a.Type, a.IsPrimary, a.Line1,
			nullable(a.Line2), nullable(a.City), nullable(a.StateProvince), nullable(a.PostalCode), nullable(a.PostalKey), nullable(a.Country), NameKey(f)})
	}
}

// insertContacts copies the new contacts in.
func (w *bulkWrite) insertContacts(ctx context.Context, tx pgx.Tx, p *plan) error {
	if len(p.creates) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts", "contacts"},
		[]string{"tenant_id", "id", "contact_type", "first_name", "last_name", "organization_name", "external_id",
			"tags", "tag_keys", "name_key", "search_text", "import_id"},
		pgx.CopyFromSlice(len(p.creates), func(i int) ([]any, error) {
			f := p.creates[i]
			return []any{w.tenant, w.contactIDs[i], f.Type, nullable(f.FirstName), nullable(f.LastName), nullable(f.OrganizationName),
				nullable(f.ExternalID), nonNil(f.Tags), tagKeys(f.Tags), NameKey(*f), SearchText(*f), w.importID}, nil
		}))
	if err != nil {
		return fmt.Errorf("insert %d contacts: %w", len(p.creates), err)
	}
	return nil
}

// insertRows copies the new phone, email and address rows in.
func (w *bulkWrite) insertRows(ctx context.Context, tx pgx.Tx) error {
	for _, t := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"contact_phones", []string{"tenant_id", "id", "contact_id", "position", "phone_number", "phone_key", "phone_type", "is_primary"}, w.phones},
		{"contact_emails", []string{"tenant_id", "id", "contact_id", "position", "email_address", "email_key", "email_type", "is_primary"}, w.emails},
		{"contact_addresses", []string{"tenant_id", "id", "contact_id", "position", "address_type", "is_primary", "line1", "line2",
			"city", "state_province", "postal_code", "postal_key", "country", "name_key"}, w.addresses},
	} {
		if len(t.rows) == 0 {
			continue
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts", t.table}, t.cols, pgx.CopyFromRows(t.rows)); err != nil {
			return fmt.Errorf("insert %d %s: %w", len(t.rows), t.table, err)
		}
	}
	return nil
}

// applyUpdates writes the updated contacts' names, external ids and tags
// with one UPDATE from a staged copy; their version moves.
func applyUpdates(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, upd []*update) error {
	if len(upd) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE import_patch (
			id bigint NOT NULL, first_name text, last_name text, organization_name text, external_id text,
			tags text[] NOT NULL, tag_keys text[] NOT NULL, name_key text NOT NULL, search_text text NOT NULL
		) ON COMMIT DROP`); err != nil {
		return fmt.Errorf("create patch table: %w", err)
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"import_patch"},
		[]string{"id", "first_name", "last_name", "organization_name", "external_id", "tags", "tag_keys", "name_key", "search_text"},
		pgx.CopyFromSlice(len(upd), func(i int) ([]any, error) {
			f := upd[i].fields
			return []any{upd[i].id, nullable(f.FirstName), nullable(f.LastName), nullable(f.OrganizationName), nullable(f.ExternalID),
				nonNil(f.Tags), tagKeys(f.Tags), NameKey(f), SearchText(f)}, nil
		}))
	if err != nil {
		return fmt.Errorf("stage updates: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE contacts.contacts c SET first_name = p.first_name, last_name = p.last_name, organization_name = p.organization_name,
			external_id = p.external_id, tags = p.tags, tag_keys = p.tag_keys, name_key = p.name_key, search_text = p.search_text,
			version = c.version + 1, updated_at = now()
		FROM import_patch p WHERE c.tenant_id = $1 AND c.id = p.id`, tenant); err != nil {
		return fmt.Errorf("update %d contacts: %w", len(upd), err)
	}
	// The addresses carry the contact's name key (migration 00005).
	if _, err := tx.Exec(ctx, `
		UPDATE contacts.contact_addresses a SET name_key = p.name_key
		FROM import_patch p WHERE a.tenant_id = $1 AND a.contact_id = p.id AND a.name_key <> p.name_key`, tenant); err != nil {
		return fmt.Errorf("update name keys of %d contacts' addresses: %w", len(upd), err)
	}
	return nil
}
