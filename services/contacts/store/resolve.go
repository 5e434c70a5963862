package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// MergedError is a read of a tombstone: contact ID was merged into Into
// (docs/merge.md). The server answers it as a 404 naming the survivor.
type MergedError struct {
	ID, Into int64
}

func (e *MergedError) Error() string {
	return fmt.Sprintf("contact %d was merged into contact %d", e.ID, e.Into)
}

// Resolved maps contact ids and external ids to live contacts.
type Resolved struct {
	ByID         map[int64]int64
	ByExternalID map[string]int64
}

// Resolve maps the tenant's contacts named by ids and external ids to the
// live contact each is now: itself, or the survivor of its merge. Unknown
// ones are left out. An external id two live contacts share (the API
// allows it) resolves to the lower id, the one created first.
func (s *Store) Resolve(ctx context.Context, tenant uuid.UUID, ids []int64, externalIDs []string) (Resolved, error) {
	out := Resolved{ByID: map[int64]int64{}, ByExternalID: map[string]int64{}}
	b := &pgx.Batch{}
	if len(ids) > 0 {
		b.Queue(`SELECT id, coalesce(merged_into, id) FROM contacts.contacts WHERE tenant_id = $1 AND id = ANY($2)`, tenant, ids).
			Query(func(rows pgx.Rows) error {
				var id, live int64
				_, err := pgx.ForEachRow(rows, []any{&id, &live}, func() error { out.ByID[id] = live; return nil })
				return err
			})
	}
	if len(externalIDs) > 0 {
		// A live contact with the external id wins over a tombstone's
		// (which leads to its survivor).
		b.Queue(`SELECT DISTINCT ON (external_id) external_id, coalesce(merged_into, id) FROM contacts.contacts
			WHERE tenant_id = $1 AND external_id = ANY($2)
			ORDER BY external_id, merged_into IS NOT NULL, id`, tenant, externalIDs).
			Query(func(rows pgx.Rows) error {
				var ext string
				var live int64
				_, err := pgx.ForEachRow(rows, []any{&ext, &live}, func() error { out.ByExternalID[ext] = live; return nil })
				return err
			})
	}
	if b.Len() == 0 {
		return out, nil
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return Resolved{}, fmt.Errorf("contacts: resolve contacts: %w", err)
	}
	return out, nil
}
