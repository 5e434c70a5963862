package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Acknowledgement statuses of a gift (docs/letters.md).
const (
	AckPending          = "pending"
	AckAcknowledged     = "acknowledged"
	AckDoNotAcknowledge = "doNotAcknowledge"
)

// Acknowledgement is a gift's acknowledgement. Status is empty for an
// order without a donation line.
type Acknowledgement struct {
	Status string
	At     *time.Time
	RunID  *uuid.UUID
}

// Acknowledgements reads the acknowledgement of each order of ids that
// is a gift, by order id.
func (s *Store) Acknowledgements(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]Acknowledgement, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, acknowledgement_status, acknowledged_at, acknowledgement_run_id
		FROM orders.orders WHERE tenant_id = $1 AND id = ANY($2) AND has_donations`, tenantID, ids)
	out := make(map[uuid.UUID]Acknowledgement, len(ids))
	var id uuid.UUID
	var a Acknowledgement
	_, err := pgx.ForEachRow(rows, []any{&id, &a.Status, &a.At, &a.RunID}, func() error {
		out[id] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("orders: read acknowledgements: %w", err)
	}
	return out, nil
}

// ErrNotAGift is SetAcknowledgement's answer for an order without a
// donation line.
var ErrNotAGift = fmt.Errorf("orders: not a gift")

// SetAcknowledgement sets a gift's status (pending or doNotAcknowledge;
// pending clears an acknowledgement) with the order's audit row, under
// the order's lock; nothing is written when it does not change.
// db.ErrNotFound for another tenant's order.
func (s *Store) SetAcknowledgement(ctx context.Context, tenantID, id uuid.UUID, status, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var old string
		var gift bool
		err := tx.QueryRow(ctx, `SELECT acknowledgement_status, has_donations FROM orders.orders WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
			tenantID, id).Scan(&old, &gift)
		if err != nil {
			return db.Interpret(err)
		}
		if !gift {
			return ErrNotAGift
		}
		if old == status {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE orders.orders SET acknowledgement_status = $3, acknowledged_at = NULL, acknowledgement_run_id = NULL,
			updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, id, status); err != nil {
			return err
		}
		return audit.Record(ctx, tx, ackEntry(tenantID, id, old, status, actor))
	})
	if err != nil {
		return fmt.Errorf("orders: set acknowledgement of %s: %w", id, err)
	}
	return nil
}

func ackEntry(tenantID, id uuid.UUID, old, status, actor string) audit.Entry {
	return audit.Entry{TenantID: tenantID.String(), EntityType: EntityOrder, EntityID: id.String(), Action: audit.Updated, Actor: actor,
		Changes: map[string]audit.Change{"acknowledgementStatus": {Old: old, New: status}}}
}

// ClaimAcknowledgements marks the pending gifts of ids acknowledged by
// run in one statement, with an audit row each, and answers them and the
// gifts of ids run had claimed already. Two overlapping runs cannot both
// claim a gift: the second's UPDATE waits on the first's row lock and then
// finds the gift no longer pending.
func (s *Store) ClaimAcknowledgements(ctx context.Context, tenantID, run uuid.UUID, ids []uuid.UUID, actor string) ([]uuid.UUID, error) {
	var out []uuid.UUID
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE orders.orders SET acknowledgement_status = 'acknowledged', acknowledged_at = now(),
				acknowledgement_run_id = $3, updated_at = now()
			WHERE tenant_id = $1 AND id = ANY($2) AND has_donations AND acknowledgement_status = 'pending' RETURNING id`, tenantID, ids, run)
		claimed, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		for _, id := range claimed {
			if err := audit.Record(ctx, tx, ackEntry(tenantID, id, AckPending, AckAcknowledged, actor)); err != nil {
				return err
			}
		}
		rows, _ = tx.Query(ctx, `SELECT id FROM orders.orders WHERE tenant_id = $1 AND id = ANY($2) AND acknowledgement_run_id = $3
			AND acknowledgement_status = 'acknowledged' AND NOT id = ANY($4)`, tenantID, ids, run, claimed)
		before, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		out = append(claimed, before...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("orders: claim acknowledgements: %w", err)
	}
	return out, nil
}
