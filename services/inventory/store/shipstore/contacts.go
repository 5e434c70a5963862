package shipstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// MoveContact moves the tenant's shipments of contact dup to contact
// surv, for a merge of duplicate contacts (docs/merge.md), with a
// shipment.updated row naming the contactId change per shipment, all in
// one transaction. It is idempotent by construction: a repeat finds no
// shipment of dup and writes nothing. It answers how many moved.
func (s *Store) MoveContact(ctx context.Context, tenantID uuid.UUID, dup, surv int64, actor string) (int64, error) {
	var moved int64
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE inventory.shipments SET contact_id = $3, updated_at = now()
			WHERE tenant_id = $1 AND contact_id = $2 RETURNING id`, tenantID, dup, surv)
		if err != nil {
			return fmt.Errorf("move shipments: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return fmt.Errorf("move shipments: %w", err)
		}
		moved = int64(len(ids))
		entries := make([]audit.Entry, len(ids))
		change := audit.Change{Old: dup, New: surv}
		for i, id := range ids {
			entries[i] = audit.Entry{TenantID: tenantID.String(), EntityType: EntityType, EntityID: id.String(), Action: audit.Updated,
				Changes: map[string]audit.Change{"contactId": change}, Actor: actor}
		}
		return writeAudit(ctx, tx, entries)
	})
	if err != nil {
		return 0, fmt.Errorf("inventory: move the shipments of contact %d to %d: %w", dup, surv, err)
	}
	return moved, nil
}
