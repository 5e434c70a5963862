package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ListFilter narrows a contact list. Zero values do not filter.
type ListFilter struct {
	// Search matches a substring of the names or email addresses, ignoring
	// case.
	Search string
	// Tag matches one tag, ignoring case.
	Tag string
	// Type is Individual or Organization.
	Type string
	// ExternalID matches exactly.
	ExternalID   string
	UpdatedSince *time.Time
	IsActive     *bool
	// CohortID names the cohort IDs came from (the page token's key);
	// IDs, when not nil, keeps those contacts only: a cohort's page of
	// members the reports service computed.
	CohortID string
	IDs      []int64
}

// ListPage selects the page: AfterID continues a keyset scan (the last id
// of the previous page), else Offset rows are skipped. SkipCount leaves
// the total out (the caller already knows it).
type ListPage struct {
	AfterID   int64
	Offset    int64
	Limit     int
	SkipCount bool
}

// List returns the contacts matching f in id order, one page of them, and
// whether more follow; and the number of contacts matching f (0 with
// SkipCount). Contacts are in id order because ids never change, so a
// keyset cursor over them stays valid while other clients edit contacts.
func (s *Store) List(ctx context.Context, tenant uuid.UUID, f ListFilter, p ListPage) ([]Contact, bool, int64, error) {
	where, args := listWhere(tenant, f)
	// Tombstones of merged contacts are in no list (docs/merge.md). The
	// count subtracts them rather than filtering them out: both counts
	// stay index-only scans (the primary key, and the partial index of
	// tombstones), where a filter on merged_into would read every row.
	pageWhere := where + " AND c.merged_into IS NULL"
	pageArgs := append([]any(nil), args...)
	if p.AfterID > 0 {
		pageArgs = append(pageArgs, p.AfterID)
		pageWhere += " AND c.id > $" + strconv.Itoa(len(pageArgs))
	}
	pageArgs = append(pageArgs, p.Limit+1)
	tail := " ORDER BY c.id LIMIT $" + strconv.Itoa(len(pageArgs))
	if p.AfterID == 0 && p.Offset > 0 {
		pageArgs = append(pageArgs, p.Offset)
		tail += " OFFSET $" + strconv.Itoa(len(pageArgs))
	}

	var (
		contacts []Contact
		total    int64
	)
	// The page and the count travel in one round trip.
	b := &pgx.Batch{}
	b.Queue(`SELECT `+contactColumns+` FROM contacts.contacts c WHERE `+pageWhere+tail, pageArgs...).Query(func(rows pgx.Rows) error {
		var err error
		contacts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Contact, error) { return scanContact(r) })
		return err
	})
	if !p.SkipCount {
		b.Queue(`SELECT (SELECT count(*) FROM contacts.contacts c WHERE `+where+`)
			- (SELECT count(*) FROM contacts.contacts c WHERE `+where+` AND c.merged_into IS NOT NULL)`, args...).QueryRow(func(row pgx.Row) error {
			return row.Scan(&total)
		})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, 0, fmt.Errorf("contacts: list contacts: %w", err)
	}
	more := len(contacts) > p.Limit
	if more {
		contacts = contacts[:p.Limit]
	}
	ptrs := make([]*Contact, len(contacts))
	for i := range contacts {
		ptrs[i] = &contacts[i]
	}
	if err := loadRows(ctx, s.pool, tenant, ptrs); err != nil {
		return nil, false, 0, fmt.Errorf("contacts: list contacts: %w", err)
	}
	return contacts, more, total, nil
}

func listWhere(tenant uuid.UUID, f ListFilter) (string, []any) {
	args := []any{tenant}
	conds := []string{"c.tenant_id = $1"}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Search != "" {
		// A substring of the names (the trigram index serves LIKE '%term%'
		// for terms of three characters or more) or the start of an email
		// address (a btree range). The two sets are unioned first so that
		// each side uses its own index.
		term := escapeLike(strings.ToLower(strings.Join(strings.Fields(f.Search), " ")))
		args = append(args, "%"+term+"%", term+"%")
		n := len(args)
		conds = append(conds, fmt.Sprintf(`c.id IN (
			SELECT s.id FROM contacts.contacts s WHERE s.tenant_id = $1 AND s.search_text LIKE $%d ESCAPE '\'
			UNION
			SELECT e.contact_id FROM contacts.contact_emails e WHERE e.tenant_id = $1 AND e.email_key LIKE $%d ESCAPE '\')`, n-1, n))
	}
	if f.Tag != "" {
		add("c.tag_keys @> ARRAY[?::text]", strings.ToLower(f.Tag))
	}
	if f.Type != "" {
		add("c.contact_type = ?", f.Type)
	}
	if f.ExternalID != "" {
		add("c.external_id = ?", f.ExternalID)
	}
	if f.UpdatedSince != nil {
		add("c.updated_at >= ?", *f.UpdatedSince)
	}
	if f.IsActive != nil {
		add("c.is_active = ?", *f.IsActive)
	}
	if f.IDs != nil {
		add("c.id = ANY(?::bigint[])", f.IDs)
	}
	return strings.Join(conds, " AND "), args
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
