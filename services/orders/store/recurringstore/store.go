package recurringstore

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/orders/store"
)

// Store is the orders store with the recurring schedules: their lifecycle,
// the installment runner's claims and outcomes, retry settings and
// installments.
type Store struct {
	*store.Store
	pool *pgxpool.Pool
}

// New returns the Store on the orders store core.
func New(core *store.Store) *Store { return &Store{Store: core, pool: core.Pool()} }
