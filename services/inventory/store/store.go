// Package store is the inventory service's SQL: items, their stock, and the
// reservations the orders service makes against it.
package store

import (
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store reads and writes the inventory schema.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Errors the store returns for the handlers to map.
var (
	// ErrDuplicateSKU is returned when another item of the tenant has the
	// SKU (letter case ignored).
	ErrDuplicateSKU = errors.New("duplicate sku")
)

// EntityType is the audit entity type of an item.
const EntityType = "InventoryItem"
