package shipstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/inventory/fulfillment/state"
	"github.com/almoner/almoner/services/inventory/store"
)

// Move is a transition a client asks for, with its body.
type Move struct {
	Action         state.Action
	Carrier        string
	TrackingNumber string
	TrackingURL    string
	Reason         string
	Restock        bool
}

// sameBody reports whether m repeats the body sh's last transition was
// made with (state.Decide's sameBody).
func (m Move) sameBody(sh Shipment) bool {
	switch m.Action {
	case state.Ship:
		return sh.Carrier == m.Carrier && sh.TrackingNumber == m.TrackingNumber && sh.TrackingURL == m.TrackingURL
	case state.Cancel:
		return sh.Reason == m.Reason
	case state.Return:
		return sh.Reason == m.Reason && sh.Restocked == m.Restock
	}
	return true
}

// Transition applies m to a shipment under its row lock: the state
// machine decides, and the new status, the stock it gives back (a cancel,
// a return with restock) and the shipment.updated row commit together. A
// repeat writes nothing. A refused move is a *state.IllegalError.
func (s *Store) Transition(ctx context.Context, tenantID, id uuid.UUID, m Move, actor string) (Shipment, error) {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		sh, err := lock(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		out, err := state.Decide(sh.Status, m.Action, m.sameBody(sh), m.Restock)
		if err != nil || !out.Changed {
			return err
		}
		if out.Restock {
			given := map[uuid.UUID]int64{}
			addUnits(given, sh.Lines)
			if err := store.GiveBack(ctx, tx, tenantID, given, actor); err != nil {
				return err
			}
		}
		if err := applyMove(ctx, tx, sh, m, out.To); err != nil {
			return err
		}
		return writeAudit(ctx, tx, []audit.Entry{moveEntry(sh, m, out.To, actor)})
	})
	if err != nil {
		return Shipment{}, fmt.Errorf("inventory: %s shipment %s: %w", m.Action, id, err)
	}
	return s.Get(ctx, tenantID, id)
}

// applyMove writes the shipment's new status with the fields the move
// sets and its time.
func applyMove(ctx context.Context, tx pgx.Tx, sh Shipment, m Move, to string) error {
	set := ""
	args := []any{sh.TenantID, sh.ID, to}
	switch m.Action {
	case state.Pack:
		set = `packed_at = now()`
	case state.Ship:
		set = `shipped_at = now(), carrier = $4, tracking_number = $5, tracking_url = $6`
		args = append(args, m.Carrier, m.TrackingNumber, m.TrackingURL)
	case state.Deliver:
		set = `delivered_at = now()`
	case state.Cancel:
		set = `cancelled_at = now(), reason = $4`
		args = append(args, m.Reason)
	case state.Return:
		set = `returned_at = now(), reason = $4, restocked = $5`
		args = append(args, m.Reason, m.Restock)
	}
	// set is one of the constant fragments above, chosen by the action.
	q := `UPDATE inventory.shipments SET status = $3, updated_at = now(), ` + set + ` WHERE tenant_id = $1 AND id = $2`
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("write shipment: %w", err)
	}
	return nil
}

// moveEntry is a move's shipment.updated row: its status, and the
// tracking fields a ship sets.
func moveEntry(sh Shipment, m Move, to, actor string) audit.Entry {
	e := statusEntry(sh, to, actor)
	if m.Action == state.Ship {
		set := func(name, old, now string) {
			if old != now {
				e.Changes[name] = audit.Change{Old: old, New: now}
			}
		}
		set("carrier", sh.Carrier, m.Carrier)
		set("trackingNumber", sh.TrackingNumber, m.TrackingNumber)
		set("trackingUrl", sh.TrackingURL, m.TrackingURL)
	}
	return e
}

// CorrectAddress replaces the address of a pending or packed shipment
// (ErrNotEditable otherwise); the same address writes nothing.
func (s *Store) CorrectAddress(ctx context.Context, tenantID, id uuid.UUID, a Address, actor string) (Shipment, error) {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		sh, err := lock(ctx, tx, tenantID, id)
		switch {
		case err != nil:
			return err
		case !state.Editable(sh.Status):
			return ErrNotEditable
		case sh.Address == a:
			return nil
		}
		b, err := json.Marshal(a)
		if err != nil {
			return fmt.Errorf("encode address: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE inventory.shipments SET shipping_address = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
			tenantID, id, b); err != nil {
			return fmt.Errorf("write address: %w", err)
		}
		return writeAudit(ctx, tx, []audit.Entry{{TenantID: tenantID.String(), EntityType: EntityType, EntityID: id.String(),
			Action: audit.Updated, Changes: map[string]audit.Change{"shippingAddress": {Old: sh.Address, New: a}}, Actor: actor}})
	})
	if err != nil {
		return Shipment{}, fmt.Errorf("inventory: correct address of shipment %s: %w", id, err)
	}
	return s.Get(ctx, tenantID, id)
}
