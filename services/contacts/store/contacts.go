package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/counter"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/normalize"
)

// EntityType is the audit log's entity type of a contact. Phone, email,
// address and relationship changes are part of the contact's own rows.
const EntityType = "Contact"

const contactColumns = `c.tenant_id, c.id, c.contact_type, c.first_name, c.last_name, c.organization_name, c.external_id, c.notes,
	c.tags, c.do_not_email, c.do_not_mail, c.do_not_call, c.is_active, c.version, c.created_at, c.updated_at, c.do_not_acknowledge,
	c.assigned_user_id::text`

// scanContact reads contactColumns, then any extra columns into extra.
func scanContact(row pgx.Row, extra ...any) (Contact, error) {
	var c Contact
	var first, last, org, ext, notes, assigned *string
	dest := []any{&c.TenantID, &c.ID, &c.Type, &first, &last, &org, &ext, &notes,
		&c.Tags, &c.DoNotEmail, &c.DoNotMail, &c.DoNotCall, &c.IsActive, &c.Version, &c.CreatedAt, &c.UpdatedAt, &c.DoNotAcknowledge, &assigned}
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return Contact{}, fmt.Errorf("read contact: %w", db.Interpret(err))
	}
	c.FirstName, c.LastName, c.OrganizationName, c.ExternalID, c.Notes = deref(first), deref(last), deref(org), deref(ext), deref(notes)
	c.AssignedUserID = deref(assigned)
	return c, nil
}

// Get reads one contact with its rows and relationships.
func (s *Store) Get(ctx context.Context, tenant uuid.UUID, id int64) (Contact, error) {
	c, err := get(ctx, s.pool, tenant, id, false)
	if err != nil {
		return Contact{}, fmt.Errorf("contacts: get contact %d: %w", id, err)
	}
	return c, nil
}

// get reads contact id with its rows; a tombstone is a *MergedError.
func get(ctx context.Context, q querier, tenant uuid.UUID, id int64, forUpdate bool) (Contact, error) {
	lock := ""
	if forUpdate {
		lock = " FOR UPDATE"
	}
	var mergedInto *int64
	c, err := scanContact(q.QueryRow(ctx, `SELECT `+contactColumns+`, c.merged_into FROM contacts.contacts c WHERE c.tenant_id = $1 AND c.id = $2`+lock, tenant, id), &mergedInto)
	if err != nil {
		return Contact{}, err
	}
	if mergedInto != nil {
		return Contact{}, &MergedError{ID: id, Into: *mergedInto}
	}
	if err := loadRows(ctx, q, tenant, []*Contact{&c}); err != nil {
		return Contact{}, err
	}
	return c, nil
}

// loadRows fills the phones, emails, addresses and relationships of
// contacts, in one round trip.
func loadRows(ctx context.Context, q querier, tenant uuid.UUID, contacts []*Contact) error {
	if len(contacts) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	queueRows(b, tenant, contacts)
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("load contact rows: %w", err)
	}
	return nil
}

// queueRows queues onto b the reads that fill the phones, emails,
// addresses and relationships of contacts (whose ids are set) when b's
// results are read.
func queueRows(b *pgx.Batch, tenant uuid.UUID, contacts []*Contact) {
	ids := make([]int64, len(contacts))
	byID := make(map[int64]*Contact, len(contacts))
	for i, c := range contacts {
		ids[i] = c.ID
		byID[c.ID] = c
		c.Phones, c.Emails, c.Addresses, c.Relationships = []Phone{}, []Email{}, []Address{}, []Relationship{}
	}
	b.Queue(`SELECT contact_id, id, phone_number, phone_key, phone_type, is_primary FROM contacts.contact_phones
		WHERE tenant_id = $1 AND contact_id = ANY($2) ORDER BY contact_id, position, id`, tenant, ids).Query(func(rows pgx.Rows) error {
		var p Phone
		var cid int64
		_, err := pgx.ForEachRow(rows, []any{&cid, &p.ID, &p.Number, &p.Key, &p.Type, &p.IsPrimary}, func() error {
			byID[cid].Phones = append(byID[cid].Phones, p)
			return nil
		})
		return err
	})
	b.Queue(`SELECT contact_id, id, email_address, email_key, email_type, is_primary FROM contacts.contact_emails
		WHERE tenant_id = $1 AND contact_id = ANY($2) ORDER BY contact_id, position, id`, tenant, ids).Query(func(rows pgx.Rows) error {
		var e Email
		var cid int64
		_, err := pgx.ForEachRow(rows, []any{&cid, &e.ID, &e.Address, &e.Key, &e.Type, &e.IsPrimary}, func() error {
			byID[cid].Emails = append(byID[cid].Emails, e)
			return nil
		})
		return err
	})
	b.Queue(`SELECT contact_id, id, address_type, is_primary, line1, line2, city, state_province, postal_code, postal_key, country
		FROM contacts.contact_addresses
		WHERE tenant_id = $1 AND contact_id = ANY($2) ORDER BY contact_id, position, id`, tenant, ids).Query(func(rows pgx.Rows) error {
		var (
			a                                         Address
			cid                                       int64
			line2, city, state, postal, pkey, country *string
		)
		_, err := pgx.ForEachRow(rows, []any{&cid, &a.ID, &a.Type, &a.IsPrimary, &a.Line1, &line2, &city, &state, &postal, &pkey, &country}, func() error {
			a.Line2, a.City, a.StateProvince, a.PostalCode, a.PostalKey, a.Country = deref(line2), deref(city), deref(state), deref(postal), deref(pkey), deref(country)
			byID[cid].Addresses = append(byID[cid].Addresses, a)
			return nil
		})
		return err
	})
	queueRelationships(b, tenant, ids, func(self int64, r Relationship) { byID[self].Relationships = append(byID[self].Relationships, r) })
}

// queueRelationships reads every relationship of the contacts ids, from
// each contact's side, with the other contact's name and type.
func queueRelationships(b *pgx.Batch, tenant uuid.UUID, ids []int64, add func(self int64, r Relationship)) {
	b.Queue(`
		SELECT x.self, x.other, x.kind, x.forward, c.contact_type, c.first_name, c.last_name, c.organization_name
		FROM (
			SELECT contact_id AS self, related_contact_id AS other, kind, true AS forward
			FROM contacts.contact_relationships WHERE tenant_id = $1 AND contact_id = ANY($2)
			UNION ALL
			SELECT related_contact_id, contact_id, kind, false
			FROM contacts.contact_relationships WHERE tenant_id = $1 AND related_contact_id = ANY($2)
		) x
		JOIN contacts.contacts c ON c.tenant_id = $1 AND c.id = x.other
		ORDER BY x.self, x.other, x.kind`, tenant, ids).Query(func(rows pgx.Rows) error {
		var (
			self, other      int64
			kind             string
			forward          bool
			otherType        string
			first, last, org *string
		)
		_, err := pgx.ForEachRow(rows, []any{&self, &other, &kind, &forward, &otherType, &first, &last, &org}, func() error {
			name := Fields{Type: otherType, FirstName: deref(first), LastName: deref(last), OrganizationName: deref(org)}.DisplayName()
			add(self, Relationship{RelatedID: other, Type: perspective(kind, forward), RelatedName: name, RelatedType: otherType})
			return nil
		})
		return err
	})
}

// perspective is the type a stored relationship has from one side: an
// Employment row reads Employer from the employee (forward) and Employee
// from the employer.
func perspective(kind string, forward bool) string {
	if kind != kindEmployment {
		return kind
	}
	if forward {
		return Employer
	}
	return Employee
}

// relRow is a stored relationship row.
type relRow struct {
	contactID, relatedID int64
	kind                 string
}

// canonical is the one stored row of relationship r of contact self.
func canonical(self int64, r Relationship) relRow {
	switch r.Type {
	case Employer:
		return relRow{self, r.RelatedID, kindEmployment}
	case Employee:
		return relRow{r.RelatedID, self, kindEmployment}
	default:
		a, b := self, r.RelatedID
		if a > b {
			a, b = b, a
		}
		return relRow{a, b, r.Type}
	}
}

func loadRelationshipsOf(ctx context.Context, q querier, tenant uuid.UUID, ids []int64) (map[int64][]Relationship, error) {
	out := make(map[int64][]Relationship, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	queueRelationships(b, tenant, ids, func(self int64, r Relationship) { out[self] = append(out[self], r) })
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("load relationships: %w", err)
	}
	return out, nil
}

// Create inserts a contact with its rows and relationships, and the audit
// rows: Created for the contact, Updated for each related contact whose
// relationships it changes. Row ids in f are ignored: every row is new.
// The contact and its rows take the tenant's next ids (ids.go), set aside
// before the transaction; a create refused for its relationships gives
// them back.
func (s *Store) Create(ctx context.Context, tenant uuid.UUID, f Fields, actor string) (Contact, error) {
	f.Phones, f.Emails, f.Addresses = withoutIDs(f.Phones, f.Emails, f.Addresses)
	ids, err := s.reserveIDs(ctx, tenant, 1, f)
	if err != nil {
		return Contact{}, fmt.Errorf("contacts: create contact: %w", err)
	}
	defer ids.release()
	if len(f.Relationships) == 0 {
		return s.createAlone(ctx, tenant, f, actor, ids)
	}
	var out Contact
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		ids.rewind()
		related, err := lockRelated(ctx, tx, tenant, 0, f)
		if err != nil {
			return err
		}
		id, err := ids.contact.Next()
		if err != nil {
			return fmt.Errorf("next contact id: %w", err)
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name, organization_name, external_id, notes,
				tags, tag_keys, do_not_email, do_not_mail, do_not_call, is_active, name_key, search_text, do_not_acknowledge, assigned_user_id)
			VALUES ($1, $16, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $17, $18::uuid)`,
			tenant, f.Type, nullable(f.FirstName), nullable(f.LastName), nullable(f.OrganizationName), nullable(f.ExternalID), nullable(f.Notes),
			nonNil(f.Tags), tagKeys(f.Tags), f.DoNotEmail, f.DoNotMail, f.DoNotCall, f.IsActive, NameKey(f), SearchText(f), id, f.DoNotAcknowledge, nullable(f.AssignedUserID))
		if err != nil {
			return fmt.Errorf("insert contact: %w", err)
		}
		if err := writeRows(ctx, tx, tenant, id, f, nil, ids); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: EntityType, EntityID: EntityID(id), Action: audit.Created, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		if err := touchRelated(ctx, tx, tenant, related, actor); err != nil {
			return err
		}
		out, err = get(ctx, tx, tenant, id, false)
		return err
	})
	if err != nil {
		return Contact{}, fmt.Errorf("contacts: create contact: %w", err)
	}
	return out, nil
}

// createAlone is Create for a contact without relationships: there is
// nothing to lock or check before the insert, so the contact, its rows,
// its audit row and the reads of what was stored go in one batch, which
// PostgreSQL runs as one implicit transaction (as an order is created,
// docs/orders.md): one round trip where the transaction took seven
// (BEGIN, insert, rows, audit row, read, rows read, COMMIT), each a
// wake-up of both processes while the contact's index entries were held
// (docs/performance.md, "Creating a contact").
func (s *Store) createAlone(ctx context.Context, tenant uuid.UUID, f Fields, actor string, ids *newIDs) (Contact, error) {
	var (
		out Contact
		err error
	)
	for attempt := 0; attempt < 3; attempt++ {
		ids.rewind()
		out, err = createBatch(ctx, s.pool, tenant, f, actor, ids)
		if !errors.Is(db.Interpret(err), db.ErrSerialization) {
			break
		}
	}
	if err != nil {
		return Contact{}, fmt.Errorf("contacts: create contact: %w", err)
	}
	return out, nil
}

// createBatch sends createAlone's batch once.
func createBatch(ctx context.Context, q querier, tenant uuid.UUID, f Fields, actor string, ids *newIDs) (Contact, error) {
	id, err := ids.contact.Next()
	if err != nil {
		return Contact{}, fmt.Errorf("next contact id: %w", err)
	}
	phones, emails, addresses := slices.Clone(f.Phones), slices.Clone(f.Emails), slices.Clone(f.Addresses)
	if err := assignRowIDs(phones, emails, addresses, ids); err != nil {
		return Contact{}, err
	}
	b := &pgx.Batch{}
	c := &Contact{ID: id}
	b.Queue(`
		INSERT INTO contacts.contacts AS c (tenant_id, id, contact_type, first_name, last_name, organization_name, external_id, notes,
			tags, tag_keys, do_not_email, do_not_mail, do_not_call, is_active, name_key, search_text, do_not_acknowledge)
		VALUES ($1, $16, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $17)
		RETURNING `+contactColumns,
		tenant, f.Type, nullable(f.FirstName), nullable(f.LastName), nullable(f.OrganizationName), nullable(f.ExternalID), nullable(f.Notes),
		nonNil(f.Tags), tagKeys(f.Tags), f.DoNotEmail, f.DoNotMail, f.DoNotCall, f.IsActive, NameKey(f), SearchText(f), id, f.DoNotAcknowledge,
	).QueryRow(func(row pgx.Row) error {
		got, err := scanContact(row)
		got.Phones, got.Emails, got.Addresses, got.Relationships = c.Phones, c.Emails, c.Addresses, c.Relationships
		*c = got
		return err
	})
	queuePhonesAndEmails(b, tenant, id, phones, emails)
	queueAddresses(b, tenant, id, addresses, NameKey(f))
	if err := audit.Queue(ctx, b, audit.Entry{TenantID: tenant.String(), EntityType: EntityType, EntityID: EntityID(id), Action: audit.Created, Actor: actor}); err != nil {
		return Contact{}, fmt.Errorf("record audit: %w", err)
	}
	queueRows(b, tenant, []*Contact{c})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return Contact{}, fmt.Errorf("insert contact: %w", err)
	}
	return *c, nil
}

func withoutIDs(phones []Phone, emails []Email, addresses []Address) ([]Phone, []Email, []Address) {
	p := slices.Clone(phones)
	for i := range p {
		p[i].ID = 0
	}
	e := slices.Clone(emails)
	for i := range e {
		e[i].ID = 0
	}
	a := slices.Clone(addresses)
	for i := range a {
		a[i].ID = 0
	}
	return p, e, a
}

// relatedState is a related contact locked for a write, with its
// relationships before the write.
type relatedState struct {
	id     int64
	before []Relationship
}

// lockWithRelated locks contacts ids, every contact related to them and
// those of rels (a write's new relationships), in id order in one
// statement, as every multi-contact write does (docs/merge.md). A write
// that locked itself first and its related contacts after deadlocked with
// one holding a related contact of lower id and then wanting the writer's
// (the other side's update, a merge, an import batch). The relationships
// are read before the lock: one made in between is found by lockRelated
// under the lock, which then locks its contact late, a narrow race that
// inTx's retry covers.
func lockWithRelated(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, ids []int64, rels []Relationship) error {
	rows, err := tx.Query(ctx, `
		SELECT related_contact_id FROM contacts.contact_relationships WHERE tenant_id = $1 AND contact_id = ANY($2)
		UNION SELECT contact_id FROM contacts.contact_relationships WHERE tenant_id = $1 AND related_contact_id = ANY($2)`, tenant, ids)
	if err != nil {
		return fmt.Errorf("read related contacts: %w", err)
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("read related contacts: %w", err)
	}
	all := append(slices.Clone(ids), old...)
	for _, r := range rels {
		all = append(all, r.RelatedID)
	}
	slices.Sort(all)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM contacts.contacts WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`,
		tenant, slices.Compact(all)); err != nil {
		return fmt.Errorf("lock contacts: %w", err)
	}
	return nil
}

// lockRelated locks, in id order, the contacts that self's relationships
// touch before and after the write (new ones from f, old ones from the
// stored rows), checks that the new ones exist and fit their relationship
// type, and returns them with their relationships as they are now.
func lockRelated(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, self int64, f Fields) ([]relatedState, error) {
	ids, err := relatedIDs(ctx, tx, tenant, self, f)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	types, err := lockContactTypes(ctx, tx, tenant, ids)
	if err != nil {
		return nil, err
	}
	if err := checkRelated(f.Relationships, types); err != nil {
		return nil, err
	}
	before, err := loadRelationshipsOf(ctx, tx, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("related contacts: %w", err)
	}
	out := make([]relatedState, len(ids))
	for i, id := range ids {
		out[i] = relatedState{id: id, before: before[id]}
	}
	return out, nil
}

// relatedIDs is the sorted ids, other than self, of the contacts f relates
// self to and of those self's stored relationships name (none for a new
// contact, self 0).
func relatedIDs(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, self int64, f Fields) ([]int64, error) {
	idSet := map[int64]bool{}
	for _, r := range f.Relationships {
		idSet[r.RelatedID] = true
	}
	if self != 0 {
		rows, err := tx.Query(ctx, `
			SELECT related_contact_id FROM contacts.contact_relationships WHERE tenant_id = $1 AND contact_id = $2
			UNION SELECT contact_id FROM contacts.contact_relationships WHERE tenant_id = $1 AND related_contact_id = $2`, tenant, self)
		if err != nil {
			return nil, fmt.Errorf("read related contacts: %w", err)
		}
		old, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, fmt.Errorf("read related contacts: %w", err)
		}
		for _, id := range old {
			idSet[id] = true
		}
	}
	delete(idSet, self)
	ids := make([]int64, 0, len(idSet))
	for id := range idSet {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// lockContactTypes locks the contacts ids (sorted) in id order and returns
// the type of each that is a live contact: a tombstone is no contact to
// relate to (not found, in checkRelated).
func lockContactTypes(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, ids []int64) (map[int64]string, error) {
	rows, err := tx.Query(ctx, `SELECT id, contact_type FROM contacts.contacts WHERE tenant_id = $1 AND id = ANY($2) AND merged_into IS NULL ORDER BY id FOR UPDATE`, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("lock related contacts: %w", err)
	}
	types := map[int64]string{}
	var (
		id  int64
		typ string
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &typ}, func() error { types[id] = typ; return nil }); err != nil {
		return nil, fmt.Errorf("lock related contacts: %w", err)
	}
	return types, nil
}

// checkRelated refuses a relationship to a contact that is not there or
// whose type does not fit the relationship (types: the live contacts').
func checkRelated(rels []Relationship, types map[int64]string) error {
	for i, r := range rels {
		t, ok := types[r.RelatedID]
		switch {
		case !ok:
			return &RefError{List: "Relationships", Index: i, Prop: "RelatedContactId", Message: fmt.Sprintf("Contact %d was not found.", r.RelatedID)}
		case r.Type == Employer && t != Organization:
			return &RefError{List: "Relationships", Index: i, Prop: "RelatedContactId", Message: fmt.Sprintf("An employer must be an organization; contact %d is an individual.", r.RelatedID)}
		case r.Type == Employee && t != Individual:
			return &RefError{List: "Relationships", Index: i, Prop: "RelatedContactId", Message: fmt.Sprintf("An employee must be an individual; contact %d is an organization.", r.RelatedID)}
		}
	}
	return nil
}

// touchRelated records an Updated row, and moves the version, of every
// related contact whose relationships the write changed: they are part of
// that contact's representation too.
func touchRelated(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, related []relatedState, actor string) error {
	if len(related) == 0 {
		return nil
	}
	ids := make([]int64, len(related))
	for i, r := range related {
		ids[i] = r.id
	}
	after, err := loadRelationshipsOf(ctx, tx, tenant, ids)
	if err != nil {
		return fmt.Errorf("touch related contacts: %w", err)
	}
	for _, r := range related {
		changes := audit.Diff(
			map[string]any{"relationships": relationshipSnapshot(r.before)},
			map[string]any{"relationships": relationshipSnapshot(after[r.id])})
		if changes == nil {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE contacts.contacts SET version = version + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenant, r.id); err != nil {
			return fmt.Errorf("touch related contact %d: %w", r.id, err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: EntityType, EntityID: EntityID(r.id),
			Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
			return fmt.Errorf("record audit of related contact %d: %w", r.id, err)
		}
	}
	return nil
}

// Update replaces contact id with f under its row lock. check sees the
// version before the change and may refuse it (If-Match). Rows of f with
// the id of one of the contact's rows keep that row; rows without an id
// keep an existing row with the same email, phone or street and postal
// code; the rest are new, and rows not kept are removed. When nothing
// changes, nothing is written: no new version, no audit row.
func (s *Store) Update(ctx context.Context, tenant uuid.UUID, id int64, f Fields, actor string, check func(version int64) error) (Contact, error) {
	// Ids for every row of f, in case all are new; those kept by existing
	// rows go back.
	ids, err := s.reserveIDs(ctx, tenant, 0, f)
	if err != nil {
		return Contact{}, fmt.Errorf("contacts: update contact %d: %w", id, err)
	}
	defer ids.release()
	var out Contact
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		ids.rewind()
		if err := lockWithRelated(ctx, tx, tenant, []int64{id}, f.Relationships); err != nil {
			return err
		}
		before, err := get(ctx, tx, tenant, id, true)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(before.Version); err != nil {
				return err
			}
		}
		if f, err = matchRows(before, f); err != nil {
			return err
		}
		if audit.Diff(before.Snapshot(), f.Snapshot()) == nil {
			out = before
			return nil
		}
		related, err := lockRelated(ctx, tx, tenant, id, f)
		if err != nil {
			return err
		}
		if err := updateContactRow(ctx, tx, tenant, id, f); err != nil {
			return err
		}
		if err := writeRows(ctx, tx, tenant, id, f, &before, ids); err != nil {
			return err
		}
		if out, err = recordUpdate(ctx, tx, tenant, id, before, actor); err != nil {
			return err
		}
		return touchRelated(ctx, tx, tenant, related, actor)
	})
	if err != nil {
		// check's refusal (a domain error), a not-found and a RefError
		// stay in the chain for the server.
		return Contact{}, fmt.Errorf("contacts: update contact %d: %w", id, err)
	}
	return out, nil
}

// updateContactRow writes f's own properties to contact id and moves its
// version.
func updateContactRow(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, id int64, f Fields) error {
	_, err := tx.Exec(ctx, `
		UPDATE contacts.contacts SET contact_type = $3, first_name = $4, last_name = $5, organization_name = $6,
			external_id = $7, notes = $8, tags = $9, tag_keys = $10, do_not_email = $11, do_not_mail = $12,
			do_not_call = $13, is_active = $14, name_key = $15, search_text = $16, do_not_acknowledge = $17,
			assigned_user_id = $18::uuid, version = version + 1, updated_at = now()
		WHERE tenant_id = $1 AND id = $2`,
		tenant, id, f.Type, nullable(f.FirstName), nullable(f.LastName), nullable(f.OrganizationName), nullable(f.ExternalID), nullable(f.Notes),
		nonNil(f.Tags), tagKeys(f.Tags), f.DoNotEmail, f.DoNotMail, f.DoNotCall, f.IsActive, NameKey(f), SearchText(f), f.DoNotAcknowledge, nullable(f.AssignedUserID))
	if err != nil {
		return fmt.Errorf("update contact row: %w", err)
	}
	return nil
}

// matchRows matches f's phone, email and address rows to before's (the
// stored contact's), so a row kept keeps its id.
func matchRows(before Contact, f Fields) (Fields, error) {
	var err error
	if f.Phones, err = matchPhones(before.Phones, f.Phones); err != nil {
		return f, err
	}
	if f.Emails, err = matchEmails(before.Emails, f.Emails); err != nil {
		return f, err
	}
	if f.Addresses, err = matchAddresses(before.Addresses, f.Addresses); err != nil {
		return f, err
	}
	return f, nil
}

// recordUpdate reads contact id as written and records its audit row with
// what changed since before.
func recordUpdate(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, id int64, before Contact, actor string) (Contact, error) {
	out, err := get(ctx, tx, tenant, id, false)
	if err != nil {
		return Contact{}, err
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: EntityType, EntityID: EntityID(id),
		Action: audit.Updated, Changes: audit.Diff(before.Snapshot(), out.Snapshot()), Actor: actor}); err != nil {
		return Contact{}, fmt.Errorf("record audit: %w", err)
	}
	return out, nil
}

// writeRows writes the phone, email and address rows and the relationships
// of contact id. Every address is written, changed or not: each carries
// the contact's name key (migration 00005), which a rename changes. before
// is the stored contact on an update (nil on create): its rows that f does
// not keep are removed. A row of f with an id is one of the contact's own
// (matched above) and is updated in place; a row without one takes the
// next of ids.
func writeRows(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, id int64, f Fields, before *Contact, ids *newIDs) error {
	// Copies: f's rows are the request's, which a retried transaction
	// matches again from the start.
	phones, emails, addresses := slices.Clone(f.Phones), slices.Clone(f.Emails), slices.Clone(f.Addresses)
	if err := assignRowIDs(phones, emails, addresses, ids); err != nil {
		return err
	}
	b := &pgx.Batch{}
	if before != nil {
		b.Queue(`DELETE FROM contacts.contact_phones WHERE tenant_id = $1 AND contact_id = $2 AND NOT (id = ANY($3))`, tenant, id, phoneIDs(phones))
		b.Queue(`DELETE FROM contacts.contact_emails WHERE tenant_id = $1 AND contact_id = $2 AND NOT (id = ANY($3))`, tenant, id, emailIDs(emails))
		b.Queue(`DELETE FROM contacts.contact_addresses WHERE tenant_id = $1 AND contact_id = $2 AND NOT (id = ANY($3))`, tenant, id, addressIDs(addresses))
		b.Queue(`DELETE FROM contacts.contact_relationships WHERE tenant_id = $1 AND (contact_id = $2 OR related_contact_id = $2)`, tenant, id)
	}
	queuePhonesAndEmails(b, tenant, id, phones, emails)
	queueAddresses(b, tenant, id, addresses, NameKey(f))
	for _, r := range f.Relationships {
		row := canonical(id, r)
		b.Queue(`
			INSERT INTO contacts.contact_relationships (tenant_id, contact_id, related_contact_id, kind) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, tenant, row.contactID, row.relatedID, row.kind)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write contact rows: %w", err)
	}
	return nil
}

// assignRowIDs gives each new row (no id yet) the next id of its kind.
func assignRowIDs(phones []Phone, emails []Email, addresses []Address, ids *newIDs) error {
	for i := range phones {
		if err := assignID(&phones[i].ID, ids.phone); err != nil {
			return fmt.Errorf("next phone id: %w", err)
		}
	}
	for i := range emails {
		if err := assignID(&emails[i].ID, ids.email); err != nil {
			return fmt.Errorf("next email id: %w", err)
		}
	}
	for i := range addresses {
		if err := assignID(&addresses[i].ID, ids.address); err != nil {
			return fmt.Errorf("next address id: %w", err)
		}
	}
	return nil
}

// queuePhonesAndEmails queues the upsert of each phone and email row of
// contact id, in their order.
func queuePhonesAndEmails(b *pgx.Batch, tenant uuid.UUID, id int64, phones []Phone, emails []Email) {
	for i, p := range phones {
		b.Queue(`
			INSERT INTO contacts.contact_phones (tenant_id, id, contact_id, position, phone_number, phone_key, phone_type, is_primary)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (tenant_id, contact_id, id) DO UPDATE SET position = excluded.position, phone_number = excluded.phone_number,
				phone_key = excluded.phone_key, phone_type = excluded.phone_type, is_primary = excluded.is_primary`,
			tenant, p.ID, id, i, p.Number, p.Key, p.Type, p.IsPrimary)
	}
	for i, e := range emails {
		b.Queue(`
			INSERT INTO contacts.contact_emails (tenant_id, id, contact_id, position, email_address, email_key, email_type, is_primary)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (tenant_id, contact_id, id) DO UPDATE SET position = excluded.position, email_address = excluded.email_address,
				email_key = excluded.email_key, email_type = excluded.email_type, is_primary = excluded.is_primary`,
			tenant, e.ID, id, i, e.Address, e.Key, e.Type, e.IsPrimary)
	}
}

// queueAddresses queues the upsert of each address row of contact id, in
// their order, each with the contact's name key.
func queueAddresses(b *pgx.Batch, tenant uuid.UUID, id int64, addresses []Address, nameKey string) {
	for i, a := range addresses {
		b.Queue(`
			INSERT INTO contacts.contact_addresses (tenant_id, id, contact_id, position, address_type, is_primary, line1, line2,
				city, state_province, postal_code, postal_key, country, name_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (tenant_id, contact_id, id) DO UPDATE SET position = excluded.position, address_type = excluded.address_type,
				is_primary = excluded.is_primary, line1 = excluded.line1, line2 = excluded.line2, city = excluded.city,
				state_province = excluded.state_province, postal_code = excluded.postal_code, postal_key = excluded.postal_key,
				country = excluded.country, name_key = excluded.name_key`,
			tenant, a.ID, id, i, a.Type, a.IsPrimary, a.Line1, nullable(a.Line2), nullable(a.City),
			nullable(a.StateProvince), nullable(a.PostalCode), nullable(a.PostalKey), nullable(a.Country), nameKey)
	}
}

// assignID gives a new row (id 0) the next id of r.
func assignID(id *int64, r *counter.Reservation) error {
	if *id != 0 {
		return nil
	}
	n, err := r.Next()
	if err != nil {
		return err
	}
	*id = n
	return nil
}

func phoneIDs(rows []Phone) []int64 {
	out := []int64{}
	for _, r := range rows {
		if r.ID != 0 {
			out = append(out, r.ID)
		}
	}
	return out
}

func emailIDs(rows []Email) []int64 {
	out := []int64{}
	for _, r := range rows {
		if r.ID != 0 {
			out = append(out, r.ID)
		}
	}
	return out
}

func addressIDs(rows []Address) []int64 {
	out := []int64{}
	for _, r := range rows {
		if r.ID != 0 {
			out = append(out, r.ID)
		}
	}
	return out
}

// match gives each desired row the id of the existing row it continues:
// the one it names by id (which must be the contact's own), else an
// unclaimed one with the same natural key.
func match(list string, existingIDs []int64, existingKeys []string, desiredIDs []int64, desiredKeys []string) ([]int64, error) {
	claimed := make(map[int64]bool, len(existingIDs))
	out := make([]int64, len(desiredIDs))
	for i, id := range desiredIDs {
		if id == 0 {
			continue
		}
		if !slices.Contains(existingIDs, id) || claimed[id] {
			return nil, &RefError{List: list, Index: i, Prop: "Id", Message: fmt.Sprintf("Row %d does not belong to this contact.", id)}
		}
		claimed[id] = true
		out[i] = id
	}
	for i, id := range desiredIDs {
		if id != 0 {
			continue
		}
		for j, eid := range existingIDs {
			if !claimed[eid] && existingKeys[j] == desiredKeys[i] {
				claimed[eid] = true
				out[i] = eid
				break
			}
		}
	}
	return out, nil
}

func matchPhones(existing, desired []Phone) ([]Phone, error) {
	eids, ekeys := make([]int64, len(existing)), make([]string, len(existing))
	for i, r := range existing {
		eids[i], ekeys[i] = r.ID, r.Key
	}
	dids, dkeys := make([]int64, len(desired)), make([]string, len(desired))
	for i, r := range desired {
		dids[i], dkeys[i] = r.ID, r.Key
	}
	ids, err := match("Phones", eids, ekeys, dids, dkeys)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(desired)
	for i := range out {
		out[i].ID = ids[i]
	}
	return out, nil
}

func matchEmails(existing, desired []Email) ([]Email, error) {
	eids, ekeys := make([]int64, len(existing)), make([]string, len(existing))
	for i, r := range existing {
		eids[i], ekeys[i] = r.ID, r.Key
	}
	dids, dkeys := make([]int64, len(desired)), make([]string, len(desired))
	for i, r := range desired {
		dids[i], dkeys[i] = r.ID, r.Key
	}
	ids, err := match("Emails", eids, ekeys, dids, dkeys)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(desired)
	for i := range out {
		out[i].ID = ids[i]
	}
	return out, nil
}

func addressKey(a Address) string {
	return strings.ToLower(a.Line1) + "\x00" + a.PostalKey + "\x00" + a.Country
}

func matchAddresses(existing, desired []Address) ([]Address, error) {
	eids, ekeys := make([]int64, len(existing)), make([]string, len(existing))
	for i, r := range existing {
		eids[i], ekeys[i] = r.ID, addressKey(r)
	}
	dids, dkeys := make([]int64, len(desired)), make([]string, len(desired))
	for i, r := range desired {
		dids[i], dkeys[i] = r.ID, addressKey(r)
	}
	ids, err := match("Addresses", eids, ekeys, dids, dkeys)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(desired)
	for i := range out {
		out[i].ID = ids[i]
	}
	return out, nil
}

// NameKey is the name duplicate detection compares: an organization's
// name, an individual's first and last name.
func NameKey(f Fields) string {
	if f.Type == Organization {
		return normalize.NameKey(f.OrganizationName)
	}
	return normalize.NameKey(f.FirstName, f.LastName)
}

// SearchText is where the list's search looks for a substring: the
// contact's names, lower-cased. (Email addresses are matched by prefix in
// contact_emails.)
func SearchText(f Fields) string {
	return normalize.NameKey(f.FirstName, f.LastName, f.OrganizationName)
}

// nonNil makes a nil list an empty one: pgx writes nil as NULL, and tags
// is NOT NULL.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func tagKeys(tags []string) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = strings.ToLower(t)
	}
	return out
}
