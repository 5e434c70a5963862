// Package store is the core of the orders service's SQL: orders with their
// lines and payments, order numbers, idempotency claims, funds, batches,
// saved payment methods, contact merges and the schedule row an order
// creates. The capabilities' stores (recurringstore, changestore,
// eventstore, importstore) build on it through its exported transaction
// steps (LockOrder, SetPaymentStatus, InsertOrder, …).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/counter"
)

// Store reads and writes the orders schema.
type Store struct {
	pool *pgxpool.Pool
	// daily remembers each tenant's open daily batch (batches.go).
	daily dailyBatches
	// numbers hands out each tenant's order numbers (numbers.go).
	numbers *counter.Counter
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, numbers: newNumbers(pool)} }

// Pool is the store's pool, for tests and tools.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Errors the store returns for the handlers to map.
var (
	ErrDuplicateName  = errors.New("duplicate name")
	ErrBatchClosed    = errors.New("batch closed")
	ErrBatchNotFound  = errors.New("batch not found")
	ErrClaimLost      = errors.New("idempotency claim lost")
	ErrIllegalState   = errors.New("illegal state transition")
	ErrOverRefund     = errors.New("refund exceeds refundable amount")
	ErrAlreadyVoided  = errors.New("already voided")
	ErrNothingToApply = errors.New("nothing to apply")
	// ErrChangeInProgress: a refund or void of the order is in flight.
	ErrChangeInProgress = errors.New("refund or void in progress")
	// ErrChargeInProgress: a schedule's installment is being charged.
	ErrChargeInProgress = errors.New("installment charge in progress")
)

// Audit entity types of the service (docs/orders.md lists their events).
const (
	EntityOrder             = "Order"
	EntityOrderDonation     = "OrderDonation"
	EntityOrderPayment      = "OrderPayment"
	EntityBatch             = "Batch"
	EntityFund              = "Fund"
	EntityRecurringDonation = "RecurringDonation"
	EntityShipment          = "Shipment"
	EntityPaymentMethod     = "PaymentMethod"
)

// Day truncates t to its UTC date.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Querier is what both a pool and a transaction offer.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
