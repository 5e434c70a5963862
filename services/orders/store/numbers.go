package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
)

// Order numbers come from one PostgreSQL sequence per tenant
// (orders.order_number_<tenant id in hex>), made on the tenant's first
// order. A sequence hands out increasing numbers without a row version per
// number: the counter row this replaced got a new version for every order,
// which no transaction of the database holding an older snapshot (a long
// report export, a backup) would let PostgreSQL prune, and it took a
// small transaction of its own (BEGIN, SET, UPDATE, COMMIT) where nextval
// is one statement. nextval is not transactional: a number whose order
// then fails is skipped, as before (docs/orders.md).

// nextNumberSQL takes the tenant's next number; NULL when the tenant has
// no sequence yet (to_regclass finds none, and nextval of NULL is NULL).
const nextNumberSQL = `SELECT nextval(to_regclass($1))`

// numberSequences remembers the tenants whose sequence exists; sequences
// are never dropped, so a tenant once seen stays valid.
type numberSequences struct{ known sync.Map }

func sequenceName(tenantID uuid.UUID) string {
	return "orders.order_number_" + hex.EncodeToString(tenantID[:])
}

// nextOrderNumber takes the tenant's next order number, making its
// sequence on the tenant's first order. It is its own statement, outside
// the order's transaction, so nothing is held until the order commits.
// CreateOrder calls it only when the number must be known before the
// order's batch is sent (an idempotency record) or the sequence is not yet
// known to exist; otherwise the order's INSERT takes the number.
func (s *Store) nextOrderNumber(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	n, ok, err := s.takeNumber(ctx, tenantID)
	if err == nil && !ok {
		if err = s.ensureNumbers(ctx, tenantID); err == nil {
			n, ok, err = s.takeNumber(ctx, tenantID)
		}
	}
	if err == nil && !ok {
		err = fmt.Errorf("sequence %s missing after it was made", sequenceName(tenantID))
	}
	if err != nil {
		return 0, fmt.Errorf("take order number: %w", err)
	}
	s.numbers.known.Store(tenantID, true)
	return n, nil
}

// takeNumber takes the next number; ok is false when the tenant has no
// sequence.
func (s *Store) takeNumber(ctx context.Context, tenantID uuid.UUID) (int64, bool, error) {
	var n *int64
	if err := s.pool.QueryRow(ctx, nextNumberSQL, sequenceName(tenantID)).Scan(&n); err != nil {
		return 0, false, err
	}
	if n == nil {
		return 0, false, nil
	}
	return *n, true, nil
}

// ensureNumbers makes the tenant's sequence unless it is known to exist.
// Two sessions making it at once can collide in the catalog even with IF
// NOT EXISTS; the loser finds it made.
func (s *Store) ensureNumbers(ctx context.Context, tenantID uuid.UUID) error {
	if _, ok := s.numbers.known.Load(tenantID); ok {
		return nil
	}
	name := sequenceName(tenantID)
	_, err := s.pool.Exec(ctx, `CREATE SEQUENCE IF NOT EXISTS `+name+` AS bigint MINVALUE 1`)
	if err != nil && db.Code(err) != db.UniqueViolation && db.Code(err) != duplicateTable {
		return fmt.Errorf("create %s: %w", name, err)
	}
	s.numbers.known.Store(tenantID, true)
	return nil
}

// duplicateTable is the SQLSTATE of a relation made by a concurrent session.
const duplicateTable = "42P07"
