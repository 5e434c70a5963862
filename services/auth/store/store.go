// Package store is the auth service's SQL: tenants and API keys.
package store

import (
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store reads and writes the auth schema.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool is the store's pool, for the service's rooms that keep their own
// SQL (services/auth/settings).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
