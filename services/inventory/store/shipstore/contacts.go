package shipstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/inventory/store"
)

// MoveContact moves the tenant's shipments of contact dup to contact
// surv, for a merge of duplicate contacts (docs/merge.md), with a
// shipment.updated row naming the contactId change per shipment, all in
// one transaction. It is idempotent by construction: a repeat finds no
// shipment of dup and writes nothing. It answers how many moved.
func (s *Store) MoveContact(ctx context.Context, tenantID uuid.UUID, dup, surv int64, actor string) (int64, error) {
	var moved int64
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := store.LockContact(ctx, tx, tenantID, dup, true); err != nil {
			return err
		}
		if err := recordMerge(ctx, tx, tenantID, dup, surv); err != nil {
			return err
		}
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

// recordMerge notes that dup was merged into surv, and points the contacts
// merged into dup earlier at surv too, so a lookup is always one hop.
func recordMerge(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, dup, surv int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO inventory.contact_merges (tenant_id, duplicate_id, survivor_id) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, duplicate_id) DO UPDATE SET survivor_id = excluded.survivor_id, merged_at = now()`, tenantID, dup, surv); err != nil {
		return fmt.Errorf("record the merge: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE inventory.contact_merges SET survivor_id = $3
		WHERE tenant_id = $1 AND survivor_id = $2`, tenantID, dup, surv); err != nil {
		return fmt.Errorf("re-point earlier merges: %w", err)
	}
	return nil
}

// survivorOf is the contact a shipment for contact is created for: the
// survivor of the merge that folded it into another, else itself. It
// holds each contact's lock (shared) before reading its merge, so a merge
// of the survivor in flight is waited for and followed: the move's
// re-pointing of contact then shows.
func survivorOf(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, contact int64) (int64, error) {
	for locked := contact; ; {
		if err := store.LockContact(ctx, tx, tenantID, locked, false); err != nil {
			return 0, err
		}
		var surv int64
		err := tx.QueryRow(ctx, `SELECT coalesce((SELECT survivor_id FROM inventory.contact_merges
			WHERE tenant_id = $1 AND duplicate_id = $2), $2)`, tenantID, contact).Scan(&surv)
		if err != nil {
			return 0, fmt.Errorf("look up merges of contact %d: %w", contact, err)
		}
		if surv == locked {
			return surv, nil
		}
		locked = surv
	}
}
