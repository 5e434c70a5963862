package changestore

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/store"
)

// Store is the orders store with the changes of recorded orders: refunds
// and voids, claimed (payment_changes) before the processor is called and
// recorded after.
type Store struct {
	*store.Store
	pool *pgxpool.Pool
}

// New returns the Store on the orders store core.
func New(core *store.Store) *Store { return &Store{Store: core, pool: core.Pool()} }
