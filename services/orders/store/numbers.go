package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/counter"
)

// Order numbers come from the tenant's counter row in orders.counters
// (pkg/counter, migrations/00007): each process reserves a block of the
// tenant's numbers with one upsert and hands them out from memory, so an
// order usually takes its number without a round trip, and the row gets
// a new version once per block rather than per order. Blocks start at one
// number (a new tenant's first order is 1) and grow with the tenant's rate
// up to maxNumberBlock. Each replica holds its own block, so numbers are
// unique and increase within a replica but are not in creation order
// across replicas; a number whose order then fails, and the rest of a
// block when a process stops, are skipped (docs/orders.md).

// CounterTable holds each tenant's counters of the orders schema.
const CounterTable = "orders.counters"

// counterOrderNumber is the name of the order-number counter in
// CounterTable.
const counterOrderNumber = "order_number"

// maxNumberBlock bounds a block of order numbers: the most a stopped
// replica skips per tenant, and about how far one replica's numbers can
// trail another's. At the benchmark's ~1,000 orders/s of one tenant the
// row then changes about four times a second.
const maxNumberBlock = 256

func newNumbers(pool *pgxpool.Pool) *counter.Counter {
	return counter.New(pool, CounterTable, counter.Options{MaxBlock: maxNumberBlock})
}

// nextOrderNumber takes the tenant's next order number: from this
// process's block, or from a block reserved first with one statement on
// the pool. Never call it inside a transaction (it may need a second
// connection of the pool); ReserveNumber is for that.
func (s *Store) nextOrderNumber(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	n, err := s.numbers.Next(ctx, tenantID, counterOrderNumber)
	if err != nil {
		return 0, fmt.Errorf("take order number: %w", err)
	}
	return n, nil
}

// ReserveNumber sets a number aside for an order written inside a
// transaction that holds a pooled connection and locks (the recurring
// runner's): reserved before the transaction begins, taken inside it, and
// given back with Release when the transaction records no order.
func (s *Store) ReserveNumber(ctx context.Context, tenantID uuid.UUID) (*counter.Reservation, error) {
	r, err := s.numbers.Reserve(ctx, tenantID, counterOrderNumber, 1)
	if err != nil {
		return nil, fmt.Errorf("reserve order number: %w", err)
	}
	return r, nil
}

// TakeNumbers takes n consecutive order numbers of the tenant at once (a
// gift import's chunk) and returns the first. Never call it inside a
// transaction, as nextOrderNumber.
func (s *Store) TakeNumbers(ctx context.Context, tenantID uuid.UUID, n int64) (int64, error) {
	return s.numbers.Take(ctx, tenantID, counterOrderNumber, n)
}
