// Package store is the orders service's SQL: funds, batches, orders with
// their lines and payments, idempotency records and recurring schedules.
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

// querier is what both a pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
