package changestore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/store"
)

// Kinds of a PaymentChange.
const (
	ChangeRefund = "refund"
	ChangeVoid   = "void"
)

// PaymentTake is one payment's part of a refund or void: a refund of
// Amount, or (Cancel) the cancel of a charge that has not settled, made
// at the processor with Key.
type PaymentTake struct {
	PaymentID uuid.UUID `json:"paymentId"`
	Amount    int64     `json:"amount"`
	Cancel    bool      `json:"cancel,omitempty"`
	Key       string    `json:"key"`
}

// PaymentChange is a refund or void claimed and not yet recorded: the
// processor is called for its takes with no transaction open, then
// FinishChange records what was done (migration 00016).
type PaymentChange struct {
	TenantID, ID, OrderID uuid.UUID
	Kind                  string
	Takes                 []PaymentTake
	Reason, Actor         string
	// Payments are the order's payments as claimed, by id, for the
	// processor calls.
	Payments map[uuid.UUID]store.Payment
}

// PlanFunc plans a change of a locked order: each payment's processor
// call and its key (changeID names the change), given the changes in
// flight on the order. It is a pure rule of the changes room.
type PlanFunc func(o store.Order, inFlight []PaymentChange, changeID uuid.UUID) ([]PaymentTake, error)

// BeginChange claims a refund or void (kind) of an order as plan makes it
// and commits it, with its lease: the processor is then called with no
// transaction open, and FinishChange records what was done.
func (s *Store) BeginChange(ctx context.Context, tenantID, orderID uuid.UUID, kind, reason string, lease time.Duration, actor string,
	plan PlanFunc) (PaymentChange, error) {
	c := PaymentChange{TenantID: tenantID, ID: uuid.Must(uuid.NewV7()), OrderID: orderID, Kind: kind, Reason: reason, Actor: actor}
	if err := s.begin(ctx, &c, lease, plan); err != nil {
		return PaymentChange{}, fmt.Errorf("orders: %s order %s: %w", kind, orderID, err)
	}
	return c, nil
}

// begin locks the order, plans c's takes from it and the changes in
// flight, and inserts the claim with its lease.
func (s *Store) begin(ctx context.Context, c *PaymentChange, lease time.Duration, plan PlanFunc) error {
	return db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := store.LockOrder(ctx, tx, c.TenantID, c.OrderID)
		if err != nil {
			return err
		}
		inFlight, err := changesInFlight(ctx, tx, o)
		if err != nil {
			return err
		}
		if c.Takes, err = plan(o, inFlight, c.ID); err != nil {
			return err
		}
		c.Payments = paymentsByID(o)
		takes, err := json.Marshal(c.Takes)
		if err != nil {
			return fmt.Errorf("encode takes: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO orders.payment_changes (tenant_id, id, order_id, kind, takes, reason, actor, lease_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 millisecond')`,
			c.TenantID, c.ID, c.OrderID, c.Kind, takes, c.Reason, c.Actor, lease.Milliseconds()); err != nil {
			return fmt.Errorf("claim %s: %w", c.Kind, err)
		}
		return nil
	})
}

// FinishChange records the first done takes of c, whose processor calls
// were made, and deletes its claim, in one transaction: a refund of what
// they gave back, or the void of their payments (and of the order when
// all were done). A claim already finished (by the sweeper) records
// nothing. It returns the order as it then is.
func (s *Store) FinishChange(ctx context.Context, c PaymentChange, done int) (store.Order, error) {
	var out store.Order
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := store.LockOrder(ctx, tx, c.TenantID, c.OrderID)
		if err != nil {
			return err
		}
		out = o
		tag, err := tx.Exec(ctx, `DELETE FROM orders.payment_changes WHERE tenant_id = $1 AND id = $2`, c.TenantID, c.ID)
		if err != nil {
			return fmt.Errorf("delete claim: %w", err)
		}
		if tag.RowsAffected() == 0 || done == 0 {
			return nil
		}
		if c.Kind == ChangeVoid {
			err = recordVoid(ctx, tx, &out, c.Takes, done, c.Actor)
			return err
		}
		out, err = applyRefund(ctx, tx, o, refundPlan(o, c.Takes[:done]), c.ID, Refund{Reason: c.Reason, Source: "api"}, c.Actor)
		return err
	})
	if err != nil {
		return store.Order{}, fmt.Errorf("orders: record %s %s of order %s: %w", c.Kind, c.ID, c.OrderID, err)
	}
	return out, nil
}

// refundPlan is takes as a plan of o's payment positions.
func refundPlan(o store.Order, takes []PaymentTake) []refundTake {
	plan := make([]refundTake, 0, len(takes))
	for _, t := range takes {
		if i := store.PaymentIndex(o, t.PaymentID); i >= 0 {
			plan = append(plan, refundTake{index: i, amount: t.Amount})
		}
	}
	return plan
}

// ExpireChange ends the lease of a change whose processor call's outcome
// is unknown, for the sweeper's next pass to finish with the same keys.
func (s *Store) ExpireChange(ctx context.Context, c PaymentChange) error {
	if _, err := s.pool.Exec(ctx, `UPDATE orders.payment_changes SET lease_until = now() - interval '1 millisecond'
		WHERE tenant_id = $1 AND id = $2`, c.TenantID, c.ID); err != nil {
		return fmt.Errorf("orders: expire %s %s: %w", c.Kind, c.ID, err)
	}
	return nil
}

// TakeStaleChange takes one change whose lease is over (its process died
// or lost the processor's answer) for lease, with its order's payments.
// ok is false when there is none.
func (s *Store) TakeStaleChange(ctx context.Context, lease time.Duration) (c PaymentChange, ok bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var takes []byte
		err := tx.QueryRow(ctx, `UPDATE orders.payment_changes SET lease_until = now() + $1 * interval '1 millisecond'
			WHERE (tenant_id, id) = (SELECT tenant_id, id FROM orders.payment_changes WHERE lease_until < now()
				ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING tenant_id, id, order_id, kind, takes, reason, actor`, lease.Milliseconds()).
			Scan(&c.TenantID, &c.ID, &c.OrderID, &c.Kind, &takes, &c.Reason, &c.Actor)
		if db.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("take a stale change: %w", err)
		}
		if err := json.Unmarshal(takes, &c.Takes); err != nil {
			return fmt.Errorf("decode takes of %s: %w", c.ID, err)
		}
		o, err := store.LockOrder(ctx, tx, c.TenantID, c.OrderID)
		if err != nil {
			return err
		}
		c.Payments, ok = paymentsByID(o), true
		return nil
	})
	if err != nil {
		return PaymentChange{}, false, fmt.Errorf("orders: %w", err)
	}
	return c, ok, nil
}

// changesInFlight reads the refunds and voids claimed on o and not yet
// recorded.
func changesInFlight(ctx context.Context, tx pgx.Tx, o store.Order) ([]PaymentChange, error) {
	rows, err := tx.Query(ctx, `SELECT id, kind, takes FROM orders.payment_changes WHERE tenant_id = $1 AND order_id = $2`, o.TenantID, o.ID)
	if err != nil {
		return nil, fmt.Errorf("read changes in flight: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentChange, error) {
		c := PaymentChange{TenantID: o.TenantID, OrderID: o.ID}
		var takes []byte
		if err := r.Scan(&c.ID, &c.Kind, &takes); err != nil {
			return c, err
		}
		return c, json.Unmarshal(takes, &c.Takes)
	})
	if err != nil {
		return nil, fmt.Errorf("read changes in flight: %w", err)
	}
	return out, nil
}

// NoChangeInFlight is ErrChangeInProgress when a refund or void of o is
// claimed and not yet recorded.
func NoChangeInFlight(ctx context.Context, tx pgx.Tx, o store.Order) error {
	var busy bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders.payment_changes WHERE tenant_id = $1 AND order_id = $2)`,
		o.TenantID, o.ID).Scan(&busy); err != nil {
		return fmt.Errorf("look for a change in flight: %w", err)
	}
	if busy {
		return store.ErrChangeInProgress
	}
	return nil
}

func paymentsByID(o store.Order) map[uuid.UUID]store.Payment {
	m := make(map[uuid.UUID]store.Payment, len(o.Payments))
	for _, p := range o.Payments {
		m[p.ID] = p
	}
	return m
}
