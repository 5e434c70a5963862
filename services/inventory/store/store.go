// Package store is the inventory service's SQL: items, their stock, and the
// reservations the orders service makes against it.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store reads and writes the inventory schema.
type Store struct {
	pool *pgxpool.Pool
	// OnRelease, when set, runs inside a whole-order release before the
	// stock moves (the fulfillment room's shipments, shipstore): when it
	// reports that the order has shipments, the units it returns replace
	// the reservations' as the stock given back, so that units already
	// shipped stay out.
	OnRelease ReleaseHook
}

// ReleaseHook cancels what an order's release cancels inside tx and
// answers the units each item gets back; handled is false when the order
// has nothing for the hook (no shipment).
type ReleaseHook func(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID, actor string) (given map[uuid.UUID]int64, handled bool, err error)

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool is the store's pool, for the capability stores built on it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// LockOrder serialises the calls that touch one order's reservations and
// shipments for the rest of tx.
func LockOrder(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID) error {
	return lockOrder(ctx, tx, tenantID, orderID)
}

// GiveBack locks the items of units in id order and adds units[id] to
// each one's stock, with its audit row, inside tx.
func GiveBack(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, units map[uuid.UUID]int64, actor string) error {
	ids := make([]uuid.UUID, 0, len(units))
	for id, n := range units {
		if n != 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	locked, err := lockItems(ctx, tx, tenantID, ids)
	if err != nil {
		return fmt.Errorf("lock items: %w", err)
	}
	b := &pgx.Batch{}
	if _, err := queueStockMoves(ctx, b, tenantID, locked, units, +1, actor); err != nil {
		return err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("give stock back: %w", err)
	}
	return nil
}

// ReservationsOf reads an order's reservations by line number inside tx.
func ReservationsOf(ctx context.Context, tx pgx.Tx, tenantID, orderID uuid.UUID) (map[int32]Reservation, error) {
	return readReservations(ctx, tx, tenantID, orderID, nil)
}

// Errors the store returns for the handlers to map.
var (
	// ErrDuplicateSKU is returned when another item of the tenant has the
	// SKU (letter case ignored).
	ErrDuplicateSKU = errors.New("duplicate sku")
)

// EntityType is the audit entity type of an item.
const EntityType = "InventoryItem"
