package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Candidate is what duplicate detection compares, normalized.
type Candidate struct {
	EmailKeys  []string
	PhoneKeys  []string
	NameKey    string
	PostalKeys []string
	// ExcludeID leaves one contact out (the one being checked).
	ExcludeID int64
}

// Hit is one reason a contact looks like the candidate.
type Hit struct {
	ContactID int64
	// Field is Email, Phone or Name (a name similar at one of the
	// candidate's postal codes).
	Field string
	// Similarity is the name's trigram similarity (1 for Email and Phone).
	Similarity float64
}

// Per-branch caps keep one very common value (a shared office email, a
// postal code with thousands of contacts) from making the query slow; the
// caller ranks and keeps the best few anyway.
const (
	maxExactHits = 50
	maxNameHits  = 200
)

// FindDuplicates returns every reason a contact of the tenant looks like
// c (tombstones have no email, phone or address rows left, and the name
// branch leaves them out): the same email key, the same phone key, or a name with trigram
// similarity of at least minSimilarity at one of c's postal keys. Each
// branch is an index lookup on (tenant_id, key); the name branch compares
// names only of the contacts at those postal codes.
func (s *Store) FindDuplicates(ctx context.Context, tenant uuid.UUID, c Candidate, minSimilarity float64) ([]Hit, error) {
	emails, phones, postals := nonNil(c.EmailKeys), nonNil(c.PhoneKeys), nonNil(c.PostalKeys)
	rows, err := s.pool.Query(ctx, `
		(SELECT DISTINCT contact_id, 'Email', 1::float8 FROM contacts.contact_emails
		 WHERE tenant_id = $1 AND email_key = ANY($2) AND contact_id <> $6 LIMIT `+fmt.Sprint(maxExactHits)+`)
		UNION ALL
		(SELECT DISTINCT contact_id, 'Phone', 1::float8 FROM contacts.contact_phones
		 WHERE tenant_id = $1 AND phone_key = ANY($3) AND contact_id <> $6 LIMIT `+fmt.Sprint(maxExactHits)+`)
		UNION ALL
		(SELECT c.id, 'Name', max(similarity(c.name_key, $4))::float8 AS sim
		 FROM contacts.contact_addresses a
		 JOIN contacts.contacts c ON c.tenant_id = a.tenant_id AND c.id = a.contact_id
		 WHERE a.tenant_id = $1 AND a.postal_key = ANY($5) AND $4 <> '' AND c.id <> $6 AND c.merged_into IS NULL
		   AND similarity(c.name_key, $4) >= $7
		 GROUP BY c.id ORDER BY sim DESC LIMIT `+fmt.Sprint(maxNameHits)+`)`,
		tenant, emails, phones, c.NameKey, postals, c.ExcludeID, minSimilarity)
	if err != nil {
		return nil, fmt.Errorf("contacts: find duplicates: %w", err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		var h Hit
		err := r.Scan(&h.ContactID, &h.Field, &h.Similarity)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("contacts: find duplicates: %w", err)
	}
	return hits, nil
}

// GetMany reads contacts by id with their rows, in the order of ids;
// missing ids and tombstones are skipped.
func (s *Store) GetMany(ctx context.Context, tenant uuid.UUID, ids []int64) ([]Contact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+contactColumns+` FROM contacts.contacts c WHERE c.tenant_id = $1 AND c.id = ANY($2) AND c.merged_into IS NULL`, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("contacts: get contacts: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Contact, error) { return scanContact(r) })
	if err != nil {
		return nil, fmt.Errorf("contacts: get contacts: %w", err)
	}
	byID := make(map[int64]*Contact, len(found))
	ptrs := make([]*Contact, len(found))
	for i := range found {
		byID[found[i].ID] = &found[i]
		ptrs[i] = &found[i]
	}
	if err := loadRows(ctx, s.pool, tenant, ptrs); err != nil {
		return nil, fmt.Errorf("contacts: get contacts: %w", err)
	}
	out := make([]Contact, 0, len(found))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, *c)
		}
	}
	return out, nil
}
