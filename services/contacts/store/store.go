// Package store is the contacts service's SQL: contacts with their phone,
// email and address rows and relationships, the list and duplicate
// queries, and contact-form submissions.
package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/counter"
	"github.com/almoner/almoner/pkg/db"
)

// Store reads and writes the contacts schema.
type Store struct {
	pool *pgxpool.Pool
	// ids numbers contacts and their rows per tenant (ids.go).
	ids *counter.Counter
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, ids: counter.New(pool, CounterTable, counter.Options{})}
}

// Pool is the store's pool (for readers of other schemas, such as the
// audit feed).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// RefError is a request row that names something that does not resolve or
// does not fit: a phone id of another contact, a related contact that does
// not exist. List, Index and Prop locate it in the request body.
type RefError struct {
	List    string
	Index   int
	Prop    string
	Message string
}

func (e *RefError) Error() string {
	return fmt.Sprintf("%s[%d].%s: %s", e.List, e.Index, e.Prop, e.Message)
}

// Contact types.
const (
	Individual   = "Individual"
	Organization = "Organization"
)

// Relationship types, as seen from the contact that has the relationship:
// what the related contact is to it.
const (
	Spouse          = "Spouse"
	HouseholdMember = "HouseholdMember"
	Employer        = "Employer"
	Employee        = "Employee"
)

// kindEmployment is the stored kind of an Employer/Employee pair.
const kindEmployment = "Employment"

// Phone is a row of contact_phones.
type Phone struct {
	ID        int64
	Number    string
	Key       string
	Type      string
	IsPrimary bool
}

// Email is a row of contact_emails.
type Email struct {
	ID        int64
	Address   string
	Key       string
	Type      string
	IsPrimary bool
}

// Address is a row of contact_addresses. Empty strings are NULLs.
type Address struct {
	ID            int64
	Type          string
	IsPrimary     bool
	Line1         string
	Line2         string
	City          string
	StateProvince string
	PostalCode    string
	PostalKey     string
	Country       string
}

// Relationship links a contact to another, from the contact's side.
// RelatedName and RelatedType are filled on reads only.
type Relationship struct {
	RelatedID   int64
	Type        string
	RelatedName string
	RelatedType string
}

// Fields are a contact's writable properties, already validated and
// normalized by the service. Empty strings are stored as NULL.
type Fields struct {
	Type             string
	FirstName        string
	LastName         string
	OrganizationName string
	ExternalID       string
	Notes            string
	Tags             []string
	DoNotEmail       bool
	DoNotMail        bool
	DoNotCall        bool
	// DoNotAcknowledge: letter runs thank none of the contact's gifts.
	DoNotAcknowledge bool
	// AssignedUserID is the staff user whose portfolio the contact is in
	// (a UUID), empty for none; the service checks the membership.
	AssignedUserID string
	IsActive       bool
	Phones         []Phone
	Emails         []Email
	Addresses      []Address
	Relationships  []Relationship
}

// Contact is a stored contact with its rows.
type Contact struct {
	Fields
	TenantID  uuid.UUID
	ID        int64
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DisplayName is how the contact is named in lists of other contacts.
func (f Fields) DisplayName() string {
	if f.Type == Organization && f.OrganizationName != "" {
		return f.OrganizationName
	}
	if n := joinNonEmpty(f.FirstName, f.LastName); n != "" {
		return n
	}
	if f.OrganizationName != "" {
		return f.OrganizationName
	}
	if len(f.Emails) > 0 {
		return f.Emails[0].Address
	}
	return ""
}

func joinNonEmpty(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += " "
		}
		out += p
	}
	return out
}

// Snapshot is the contact's properties under their wire names, as the
// audit log's changes compare them. Timestamps and versions are left out:
// they change on every write and say nothing about what changed.
func (f Fields) Snapshot() map[string]any {
	phones := make([]map[string]any, len(f.Phones))
	for i, p := range f.Phones {
		phones[i] = map[string]any{"id": p.ID, "phoneNumber": p.Number, "phoneType": p.Type, "isPrimary": p.IsPrimary}
	}
	emails := make([]map[string]any, len(f.Emails))
	for i, e := range f.Emails {
		emails[i] = map[string]any{"id": e.ID, "emailAddress": e.Address, "emailType": e.Type, "isPrimary": e.IsPrimary}
	}
	addresses := make([]map[string]any, len(f.Addresses))
	for i, a := range f.Addresses {
		addresses[i] = map[string]any{"id": a.ID, "addressType": a.Type, "isPrimary": a.IsPrimary, "line1": a.Line1,
			"line2": null(a.Line2), "city": null(a.City), "stateProvince": null(a.StateProvince),
			"postalCode": null(a.PostalCode), "country": null(a.Country)}
	}
	tags := f.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{
		"contactType":      f.Type,
		"firstName":        null(f.FirstName),
		"lastName":         null(f.LastName),
		"organizationName": null(f.OrganizationName),
		"externalId":       null(f.ExternalID),
		"notes":            null(f.Notes),
		"tags":             tags,
		"isActive":         f.IsActive,
		"communicationPreferences": map[string]any{
			"doNotEmail": f.DoNotEmail, "doNotMail": f.DoNotMail, "doNotCall": f.DoNotCall, "doNotAcknowledge": f.DoNotAcknowledge},
		"phones":         phones,
		"emails":         emails,
		"addresses":      addresses,
		"relationships":  relationshipSnapshot(f.Relationships),
		"assignedUserId": null(f.AssignedUserID),
	}
}

func relationshipSnapshot(rels []Relationship) []map[string]any {
	sorted := append([]Relationship(nil), rels...)
	sortRelationships(sorted)
	out := make([]map[string]any, len(sorted))
	for i, r := range sorted {
		out[i] = map[string]any{"relatedContactId": r.RelatedID, "relationshipType": r.Type}
	}
	return out
}

func sortRelationships(rels []Relationship) {
	sort.Slice(rels, func(i, j int) bool {
		if rels[i].RelatedID != rels[j].RelatedID {
			return rels[i].RelatedID < rels[j].RelatedID
		}
		return rels[i].Type < rels[j].Type
	})
}

func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullable turns "" into SQL NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// inTx runs fn in a transaction, again (up to three times) when PostgreSQL
// aborts it for a deadlock or a serialization failure (db.ErrSerialization):
// writes that touch several contacts (relationships) lock them in id
// order, but a contact's old relationships are only known after its own
// lock is taken. Its callers wrap what it returns.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = db.InTx(ctx, s.pool, fn)
		if !errors.Is(db.Interpret(err), db.ErrSerialization) {
			return err
		}
	}
	return err
}

// EntityID is the audit log's entity id of a contact.
func EntityID(id int64) string { return strconv.FormatInt(id, 10) }

// Exists reports whether contact id exists in the tenant.
func (s *Store) Exists(ctx context.Context, tenant uuid.UUID, id int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM contacts.contacts WHERE tenant_id = $1 AND id = $2)`, tenant, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("contacts: check contact exists: %w", err)
	}
	return ok, nil
}
