package eventstore

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/store"
)

// Store is the orders store with the processor notifications: each applied
// once to its payment, its order and an installment's schedule.
type Store struct {
	*store.Store
	pool *pgxpool.Pool
}

// New returns the Store on the orders store core.
func New(core *store.Store) *Store { return &Store{Store: core, pool: core.Pool()} }
