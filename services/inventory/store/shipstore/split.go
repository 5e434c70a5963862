package shipstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/inventory/fulfillment/state"
)

// SplitPart is a quantity of one item to move to the new shipment.
type SplitPart struct {
	ItemID   uuid.UUID
	Quantity int32
}

// SplitError refuses a split: the part at Index (-1 for the whole
// request) asks for what the shipment does not have.
type SplitError struct {
	Index   int
	Message string
}

func (e *SplitError) Error() string { return e.Message }

// Split moves parts of a pending shipment to a new pending shipment of the
// same order, under the shipment's row lock, and returns the new one. No
// stock moves: the units stay reserved, now in two shipments.
func (s *Store) Split(ctx context.Context, tenantID, id uuid.UUID, parts []SplitPart, actor string) (Shipment, error) {
	newID := uuid.Must(uuid.NewV7())
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		sh, err := lock(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if sh.Status != state.Pending {
			return &SplitError{Index: -1, Message: fmt.Sprintf("Only a pending shipment can be split; this one is %s.", sh.Status)}
		}
		kept, moved, err := planSplit(sh.Lines, parts)
		if err != nil {
			return err
		}
		n := NewShipment{TenantID: tenantID, OrderID: sh.OrderID, OrderNumber: sh.OrderNumber, OrderDate: sh.OrderDate,
			ContactID: sh.ContactID, BatchID: sh.BatchID, Address: sh.Address}
		if err := insert(ctx, tx, n, newID, state.Pending, moved); err != nil {
			return err
		}
		if err := rewriteLines(ctx, tx, tenantID, id, kept); err != nil {
			return err
		}
		return writeAudit(ctx, tx, []audit.Entry{
			{TenantID: tenantID.String(), EntityType: EntityType, EntityID: newID.String(), Action: audit.Created, Actor: actor},
			{TenantID: tenantID.String(), EntityType: EntityType, EntityID: id.String(), Action: audit.Updated, Actor: actor,
				Changes: map[string]audit.Change{"lines": {Old: units(sh.Lines), New: units(kept)}}},
		})
	})
	if err != nil {
		return Shipment{}, fmt.Errorf("inventory: split shipment %s: %w", id, err)
	}
	return s.Get(ctx, tenantID, newID)
}

// planSplit takes each part's quantity from the lines of its item, in
// line order, and returns the lines kept and moved. Every part must be
// covered and at least one unit must stay.
func planSplit(lines []Line, parts []SplitPart) (kept, moved []Line, err error) {
	kept = append([]Line(nil), lines...)
	take := map[int32]int32{}
	for i, p := range parts {
		left := p.Quantity
		for j := range kept {
			if left == 0 {
				break
			}
			if kept[j].ItemID != p.ItemID || kept[j].Quantity == 0 {
				continue
			}
			n := min(left, kept[j].Quantity)
			kept[j].Quantity -= n
			take[kept[j].LineNumber] += n
			left -= n
		}
		if left > 0 {
			return nil, nil, &SplitError{Index: i, Message: fmt.Sprintf("The shipment has %d fewer units of item '%s' than the split asks for.", left, p.ItemID)}
		}
	}
	for _, l := range lines {
		if n := take[l.LineNumber]; n > 0 {
			m := l
			m.Quantity = n
			moved = append(moved, m)
		}
	}
	remaining := kept[:0]
	for _, l := range kept {
		if l.Quantity > 0 {
			remaining = append(remaining, l)
		}
	}
	if len(remaining) == 0 {
		return nil, nil, &SplitError{Index: -1, Message: "A split must leave at least one unit in the shipment."}
	}
	return remaining, moved, nil
}

// rewriteLines replaces a shipment's lines with kept.
func rewriteLines(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID, kept []Line) error {
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM inventory.shipment_lines WHERE tenant_id = $1 AND shipment_id = $2`, tenantID, id)
	for _, l := range kept {
		b.Queue(`INSERT INTO inventory.shipment_lines (tenant_id, shipment_id, line_number, item_id, sku, name, quantity, stock_moved)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, tenantID, id, l.LineNumber, l.ItemID, l.SKU, l.Name, l.Quantity, l.StockMoved)
	}
	b.Queue(`UPDATE inventory.shipments SET updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("rewrite shipment lines: %w", err)
	}
	return nil
}

// unitLine is a line as an audit change shows it.
type unitLine struct {
	ItemID   string `json:"itemId"`
	SKU      string `json:"sku"`
	Quantity int32  `json:"quantity"`
}

// units is lines as an audit change shows them.
func units(lines []Line) []unitLine {
	out := make([]unitLine, len(lines))
	for i, l := range lines {
		out[i] = unitLine{ItemID: l.ItemID.String(), SKU: l.SKU, Quantity: l.Quantity}
	}
	return out
}
