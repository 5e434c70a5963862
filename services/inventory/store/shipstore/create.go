package shipstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/inventory/fulfillment/state"
	"github.com/almoner/almoner/services/inventory/store"
)

// NewShipment is what an order's first shipment is made of: the order's
// facts, as its transaction recorded them, and its item lines.
type NewShipment struct {
	TenantID    uuid.UUID
	OrderID     uuid.UUID
	OrderNumber int64
	OrderDate   time.Time
	ContactID   int64
	BatchID     *uuid.UUID
	Address     Address
	LineNumbers []int32
}

// Create makes an order's first shipment (its id is the order's) from the
// order's reservations, under the order's lock, and reports whether it
// existed already. The lines carry the reservations' units and whether
// they took stock. An order whose reservations were all released before
// its shipment arrived (voided meanwhile) gets a cancelled shipment:
// nothing is left to ship and no stock moves. The shipment.created event
// is the order's: its transaction wrote it with the shipment's request.
// The shipment's id is the order's; it is not read back (the handoff is on
// the order's path).
func (s *Store) Create(ctx context.Context, n NewShipment) (bool, error) {
	var replayed bool
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := store.LockOrder(ctx, tx, n.TenantID, n.OrderID); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM inventory.shipments WHERE tenant_id = $1 AND id = $2)`,
			n.TenantID, n.OrderID).Scan(&exists); err != nil {
			return fmt.Errorf("look for the shipment: %w", err)
		}
		if exists {
			replayed = true
			return nil
		}
		lines, status, err := linesFromReservations(ctx, tx, n)
		if err != nil {
			return err
		}
		// A merge that folded the order's contact into another after the
		// order was recorded: the shipment is the survivor's, as the
		// merge's move would have made it.
		if n.ContactID, err = survivorOf(ctx, tx, n.TenantID, n.ContactID); err != nil {
			return err
		}
		return insert(ctx, tx, n, n.OrderID, status, lines)
	})
	if err != nil {
		return false, fmt.Errorf("inventory: create shipment of order %s: %w", n.OrderID, err)
	}
	return replayed, nil
}

// linesFromReservations makes the shipment's lines from the order's
// reservations of n's lines, and its status: pending, or cancelled when
// every one was released.
func linesFromReservations(ctx context.Context, tx pgx.Tx, n NewShipment) ([]Line, string, error) {
	rs, err := store.ReservationsOf(ctx, tx, n.TenantID, n.OrderID)
	if err != nil {
		return nil, "", err
	}
	lines := make([]Line, 0, len(n.LineNumbers))
	released := 0
	for _, ln := range n.LineNumbers {
		r, ok := rs[ln]
		if !ok {
			return nil, "", fmt.Errorf("line %d: %w", ln, ErrNoReservation)
		}
		if r.State == store.StateReleased {
			released++
		}
		lines = append(lines, Line{LineNumber: ln, ItemID: r.ItemID, SKU: r.SKU, Name: r.Name, Quantity: r.Quantity, StockMoved: r.StockMoved})
	}
	if len(lines) > 0 && released == len(lines) {
		return lines, state.Cancelled, nil
	}
	return lines, state.Pending, nil
}

// insert writes a shipment with id and its lines inside tx.
func insert(ctx context.Context, tx pgx.Tx, n NewShipment, id uuid.UUID, status string, lines []Line) error {
	addr, err := json.Marshal(n.Address)
	if err != nil {
		return fmt.Errorf("encode address: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO inventory.shipments (tenant_id, id, order_id, order_number, order_date, contact_id, batch_id, status,
			shipping_address, cancelled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $8 = 'cancelled' THEN now() END)`,
		n.TenantID, id, n.OrderID, n.OrderNumber, n.OrderDate, n.ContactID, n.BatchID, status, addr)
	for _, l := range lines {
		b.Queue(`INSERT INTO inventory.shipment_lines (tenant_id, shipment_id, line_number, item_id, sku, name, quantity, stock_moved)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, n.TenantID, id, l.LineNumber, l.ItemID, l.SKU, l.Name, l.Quantity, l.StockMoved)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write shipment: %w", err)
	}
	return nil
}

// cancelForRelease is the core store's release hook: inside the release's
// transaction (the order locked) it cancels the order's pending and
// packed shipments and answers their units that took stock. Units of
// shipped, delivered or returned shipments stay out: a return with
// restock gives them back. An order without shipments is not handled.
func (s *Store) cancelForRelease(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, actor string) (map[uuid.UUID]int64, bool, error) {
	rows, err := tx.Query(ctx, `SELECT `+columns+` FROM inventory.shipments WHERE tenant_id = $1 AND order_id = $2 ORDER BY id FOR UPDATE`,
		tenantID, orderID)
	if err != nil {
		return nil, false, fmt.Errorf("lock the order's shipments: %w", err)
	}
	shs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Shipment, error) { return scan(r) })
	if err != nil || len(shs) == 0 {
		return nil, false, err
	}
	if err := loadLines(ctx, tx, tenantID, shs); err != nil {
		return nil, false, err
	}
	given := map[uuid.UUID]int64{}
	var entries []audit.Entry
	for _, sh := range shs {
		if !state.Editable(sh.Status) {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE inventory.shipments SET status = 'cancelled', reason = $3, cancelled_at = now(), updated_at = now()
			WHERE tenant_id = $1 AND id = $2`, tenantID, sh.ID, reasonOrderReleased); err != nil {
			return nil, false, fmt.Errorf("cancel shipment %s: %w", sh.ID, err)
		}
		addUnits(given, sh.Lines)
		entries = append(entries, statusEntry(sh, state.Cancelled, actor))
	}
	if err := writeAudit(ctx, tx, entries); err != nil {
		return nil, false, err
	}
	return given, true, nil
}

// reasonOrderReleased is the reason of a shipment its order's void or
// full refund cancelled.
const reasonOrderReleased = "The order was voided or refunded in full."

// addUnits adds the units of lines that took stock to given.
func addUnits(given map[uuid.UUID]int64, lines []Line) {
	for _, l := range lines {
		if l.StockMoved {
			given[l.ItemID] += int64(l.Quantity)
		}
	}
}

// statusEntry is the shipment.updated audit row of a status change.
func statusEntry(sh Shipment, to, actor string) audit.Entry {
	return audit.Entry{TenantID: sh.TenantID.String(), EntityType: EntityType, EntityID: sh.ID.String(), Action: audit.Updated,
		Changes: map[string]audit.Change{"status": {Old: sh.Status, New: to}}, Actor: actor}
}

// writeAudit appends entries inside tx.
func writeAudit(ctx context.Context, tx pgx.Tx, entries []audit.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	if err := audit.QueueAll(ctx, b, entries); err != nil {
		return fmt.Errorf("queue audit: %w", err)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write audit: %w", err)
	}
	return nil
}
