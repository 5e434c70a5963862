package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// NextOrderNumber takes the tenant's next order number ahead of the order
// (an order charged at a processor names its number in the charge).
func (s *Store) NextOrderNumber(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	n, err := s.nextOrderNumber(ctx, tenantID)
	if err != nil {
		return 0, fmt.Errorf("orders: next order number: %w", err)
	}
	return n, nil
}

// PaymentMethod is a saved card or bank account of a contact.
type PaymentMethod struct {
	TenantID   uuid.UUID
	ID         string
	ContactID  int64
	Provider   string
	Mode       string
	CustomerID string
	Type       string
	Brand      string
	Last4      string
	ExpMonth   int32
	ExpYear    int32
	IsDefault  bool
	CreatedAt  time.Time
}

const methodColumns = `tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4, exp_month, exp_year, is_default, created_at`

func scanMethod(row pgx.Row) (PaymentMethod, error) {
	var m PaymentMethod
	err := row.Scan(&m.TenantID, &m.ID, &m.ContactID, &m.Provider, &m.Mode, &m.CustomerID, &m.Type, &m.Brand, &m.Last4,
		&m.ExpMonth, &m.ExpYear, &m.IsDefault, &m.CreatedAt)
	if err != nil {
		return PaymentMethod{}, fmt.Errorf("read payment method: %w", db.Interpret(err))
	}
	return m, nil
}

// queueSaveMethod saves a method with the order that attached it. A method
// saved again (a second order with the same card) is attached again if it
// had been detached; the contact's first active method is its default.
func queueSaveMethod(b *pgx.Batch, m PaymentMethod) {
	b.Queue(`WITH c AS (SELECT `+contactForWrite("$1", "$3::bigint")+` AS id)
		INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4, exp_month, exp_year, is_default)
		SELECT $1, $2, c.id, $4, $5, $6, $7, $8, $9, $10, $11,
			NOT EXISTS (SELECT 1 FROM orders.payment_methods WHERE tenant_id = $1 AND contact_id = c.id AND detached_at IS NULL)
		FROM c
		ON CONFLICT (tenant_id, id) DO UPDATE SET detached_at = NULL, customer_id = EXCLUDED.customer_id`,
		m.TenantID, m.ID, m.ContactID, m.Provider, m.Mode, m.CustomerID, m.Type, m.Brand, m.Last4, m.ExpMonth, m.ExpYear)
}

// MethodContacts maps each of ids that the tenant has ever saved (detached
// too: a detached method still names whose card it was) to the contact it
// was saved for. A token never saved in the tenant is absent.
func (s *Store) MethodContacts(ctx context.Context, tenantID uuid.UUID, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, contact_id FROM orders.payment_methods WHERE tenant_id = $1 AND id = ANY($2)`, tenantID, ids)
	if err != nil {
		return nil, fmt.Errorf("orders: read payment methods' contacts: %w", err)
	}
	var id string
	var contact int64
	_, err = pgx.ForEachRow(rows, []any{&id, &contact}, func() error {
		out[id] = contact
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("orders: read payment methods' contacts: %w", err)
	}
	return out, nil
}

// ListPaymentMethods returns a contact's saved methods, oldest first.
func (s *Store) ListPaymentMethods(ctx context.Context, tenantID uuid.UUID, contactID int64) ([]PaymentMethod, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
		WHERE tenant_id = $1 AND contact_id = $2 AND detached_at IS NULL ORDER BY created_at, id`, tenantID, contactID)
	if err != nil {
		return nil, fmt.Errorf("orders: list payment methods: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentMethod, error) { return scanMethod(r) })
	if err != nil {
		return nil, fmt.Errorf("orders: list payment methods: %w", err)
	}
	return list, nil
}

// GetPaymentMethod reads one saved (not detached) method.
func (s *Store) GetPaymentMethod(ctx context.Context, tenantID uuid.UUID, id string) (PaymentMethod, error) {
	m, err := scanMethod(s.pool.QueryRow(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
		WHERE tenant_id = $1 AND id = $2 AND detached_at IS NULL`, tenantID, id))
	if err != nil {
		return PaymentMethod{}, fmt.Errorf("orders: get payment method %s: %w", id, err)
	}
	return m, nil
}

// ContactMethod reads a contact's saved (not detached) method.
func (s *Store) ContactMethod(ctx context.Context, tenantID uuid.UUID, contactID int64, id string) (PaymentMethod, error) {
	m, err := scanMethod(s.pool.QueryRow(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
		WHERE tenant_id = $1 AND contact_id = $2 AND id = $3 AND detached_at IS NULL`, tenantID, contactID, id))
	if err != nil {
		return PaymentMethod{}, fmt.Errorf("orders: get payment method %s: %w", id, err)
	}
	return m, nil
}

// MarkMethodDetached marks a contact's method detached, once the
// processor let go of it, with its audit row; the default passes to the
// contact's oldest remaining method (the survivor's, when a merge moved
// it meanwhile). A method detached meanwhile (a second request) is left
// as it is.
//
// The contact's lock (contactForWrite, shared) comes first, as for every
// write of a contact's rows: a merge of the contact then waits for the
// whole detach. Locking only the method deadlocked with a merge that,
// holding the contact's lock, had locked the other method and waited for
// this one, while the detach passed the default to that other method.
func (s *Store) MarkMethodDetached(ctx context.Context, tenantID uuid.UUID, contactID int64, id, actor string) error {
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// A merge that committed since the method was read moved it to
		// the survivor: it is the survivor's method that is detached.
		if err := tx.QueryRow(ctx, `SELECT `+contactForWrite("$1", "$2::bigint"), tenantID, contactID).Scan(&contactID); err != nil {
			return fmt.Errorf("lock the contact: %w", err)
		}
		m, err := scanMethod(tx.QueryRow(ctx, `SELECT `+methodColumns+` FROM orders.payment_methods
			WHERE tenant_id = $1 AND contact_id = $2 AND id = $3 AND detached_at IS NULL FOR UPDATE`, tenantID, contactID, id))
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock payment method: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE orders.payment_methods SET detached_at = now(), is_default = false WHERE tenant_id = $1 AND id = $2`, tenantID, id); err != nil {
			return fmt.Errorf("mark payment method detached: %w", err)
		}
		if m.IsDefault {
			if _, err := tx.Exec(ctx, `UPDATE orders.payment_methods SET is_default = true WHERE tenant_id = $1 AND id = (
					SELECT id FROM orders.payment_methods WHERE tenant_id = $1 AND contact_id = $2 AND detached_at IS NULL ORDER BY created_at, id LIMIT 1)`,
				tenantID, contactID); err != nil {
				return fmt.Errorf("move default payment method: %w", err)
			}
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityPaymentMethod, EntityID: id, Action: audit.Deleted, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("orders: detach payment method %s: %w", id, err)
	}
	return nil
}

// Customer returns the processor customer of a contact, if one was made.
func (s *Store) Customer(ctx context.Context, tenantID uuid.UUID, contactID int64, provider, mode string) (string, bool, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT customer_id FROM orders.processor_customers
		WHERE tenant_id = $1 AND contact_id = $2 AND provider = $3 AND mode = $4`, tenantID, contactID, provider, mode).Scan(&id)
	if db.IsNoRows(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("orders: read processor customer: %w", err)
	}
	return id, true, nil
}

// SaveCustomer keeps a contact's processor customer and returns the one
// kept: when two requests made one at once, the first saved wins (both
// made the same one anyway: its creation is idempotent by contact).
func (s *Store) SaveCustomer(ctx context.Context, tenantID uuid.UUID, contactID int64, provider, mode, customerID string) (string, error) {
	var kept string
	err := s.pool.QueryRow(ctx, `INSERT INTO orders.processor_customers (tenant_id, contact_id, provider, mode, customer_id)
		VALUES ($1, `+contactForWrite("$1", "$2")+`, $3, $4, $5)
		ON CONFLICT (tenant_id, contact_id, provider, mode) DO UPDATE SET customer_id = orders.processor_customers.customer_id
		RETURNING customer_id`, tenantID, contactID, provider, mode, customerID).Scan(&kept)
	if err != nil {
		return "", fmt.Errorf("orders: save processor customer: %w", err)
	}
	return kept, nil
}

// Settlement is what a processor notification does to a payment.
type Settlement int

const (
	// SettleSucceeded: the charge succeeded.
	SettleSucceeded Settlement = iota + 1
	// SettleFailed: the charge failed or was cancelled.
	SettleFailed
	// SettleRefunded: the processor has refunded RefundedMinor in all.
	SettleRefunded
	// SettleDisputed: the donor's bank disputes the charge.
	SettleDisputed
)

// Notification is a verified processor event for one charge.
type Notification struct {
	Provider  string
	EventID   string
	EventType string
	Reference string
	Settle    Settlement
	// RefundedMinor is, for SettleRefunded, the charge's total refunded
	// at the processor.
	RefundedMinor int64
	// Reason is the processor's reason for a failure, kept in the log of
	// changes and on a failed installment.
	Reason string
	// On is the day the notification is applied: a failed installment's
	// retry days count from it.
	On time.Time
}

// Applied says what a notification did.
type Applied struct {
	// Duplicate: the event was applied before; nothing changed.
	Duplicate bool
	// Unknown: no payment of the tenant has the event's charge.
	Unknown bool
	// Order is the order after the change (zero when none).
	Order Order
	// Changed is false when the order was already where the event says.
	Changed bool
	// ReleaseStock: the order stopped standing (Failed or fully refunded)
	// and has item lines whose stock goes back.
	ReleaseStock bool
}

// ErrUnknownCharge means no payment of the tenant has the charge.
var errUnknownCharge = errors.New("unknown charge")

// ApplyNotification applies a processor event exactly once: the event id
// is recorded in the same transaction as its effect, so a redelivered
// event changes nothing. An event for a charge the tenant does not have
// leaves no trace (it may belong to another system on the same account).
func (s *Store) ApplyNotification(ctx context.Context, tenantID uuid.UUID, n Notification, actor string) (Applied, error) {
	var out Applied
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO orders.processor_events (tenant_id, provider, event_id, event_type) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, tenantID, n.Provider, n.EventID, n.EventType)
		if err != nil {
			return fmt.Errorf("record processor event: %w", err)
		}
		if tag.RowsAffected() == 0 {
			out.Duplicate = true
			return nil
		}
		var orderID, paymentID uuid.UUID
		err = tx.QueryRow(ctx, `SELECT order_id, id FROM orders.order_payments
			WHERE tenant_id = $1 AND processor_reference = $2 AND processor = $3`, tenantID, n.Reference, n.Provider).Scan(&orderID, &paymentID)
		if db.IsNoRows(err) {
			return errUnknownCharge
		}
		if err != nil {
			return fmt.Errorf("find payment by processor reference: %w", err)
		}
		o, err := lockOrder(ctx, tx, tenantID, orderID)
		if err != nil {
			return err
		}
		// A refund or void in flight may be what the event reports: it is
		// applied once that change is recorded (the processor sends it
		// again), not counted twice.
		if err := noChangeInFlight(ctx, tx, o); err != nil {
			return err
		}
		out, err = settle(ctx, tx, o, paymentID, n, actor)
		return err
	})
	if errors.Is(err, errUnknownCharge) {
		return Applied{Unknown: true}, nil
	}
	if err != nil {
		return Applied{}, fmt.Errorf("orders: apply processor event %s: %w", n.EventID, err)
	}
	return out, nil
}

// settle applies one notification to a locked order: each settlement is a
// step of its own, and each leaves the order as it is when the event is
// already reflected (Changed false).
func settle(ctx context.Context, tx pgx.Tx, o Order, paymentID uuid.UUID, n Notification, actor string) (Applied, error) {
	idx := -1
	for i, p := range o.Payments {
		if p.ID == paymentID {
			idx = i
		}
	}
	if idx < 0 {
		return Applied{}, fmt.Errorf("payment %s not on its order %s", paymentID, o.ID)
	}
	switch n.Settle {
	case SettleSucceeded:
		return settleSucceeded(ctx, tx, o, idx, actor)
	case SettleFailed:
		return settleFailed(ctx, tx, o, idx, n, actor)
	case SettleRefunded:
		return settleRefunded(ctx, tx, o, idx, n.RefundedMinor, actor)
	case SettleDisputed:
		return settleDisputed(ctx, tx, o, idx, actor)
	}
	return Applied{Order: o}, nil
}

func unsettled(p Payment) bool {
	return p.Status == PaymentPending || p.Status == PaymentRequiresAction
}

// settleSucceeded captures an unsettled payment; the order completes once
// none of its payments is unsettled, and an installment's order then
// clears its schedule's declines (installmentSettled).
func settleSucceeded(ctx context.Context, tx pgx.Tx, o Order, idx int, actor string) (Applied, error) {
	p := o.Payments[idx]
	if !unsettled(p) {
		return Applied{Order: o}, nil
	}
	if err := setPaymentStatus(ctx, tx, o.TenantID, o.ID, p, PaymentCaptured, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = PaymentCaptured
	if o.Status == StatusPending && !anyUnsettled(o.Payments) {
		if err := setOrderStatus(ctx, tx, &o, StatusCompleted, audit.Updated, actor); err != nil {
			return Applied{}, err
		}
		if err := installmentSettled(ctx, tx, o); err != nil {
			return Applied{}, err
		}
	}
	return Applied{Order: o, Changed: true}, nil
}

// settleFailed fails an unsettled payment and its Pending order, whose
// stock then goes back; an installment's order counts as a declined
// attempt of its schedule (failInstallment).
func settleFailed(ctx context.Context, tx pgx.Tx, o Order, idx int, n Notification, actor string) (Applied, error) {
	p := o.Payments[idx]
	if !unsettled(p) {
		return Applied{Order: o}, nil
	}
	if err := setPaymentStatus(ctx, tx, o.TenantID, o.ID, p, PaymentFailed, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = PaymentFailed
	out := Applied{Order: o, Changed: true}
	if o.Status == StatusPending {
		if err := setOrderStatus(ctx, tx, &o, StatusFailed, audit.Updated, actor); err != nil {
			return Applied{}, err
		}
		on := n.On
		if on.IsZero() {
			on = time.Now()
		}
		if err := failInstallment(ctx, tx, o, cmp.Or(n.Reason, "payment_failed"), Day(on)); err != nil {
			return Applied{}, err
		}
		out.Order, out.ReleaseStock = o, len(o.Items) > 0
	}
	return out, nil
}

// settleRefunded records a refund made at the processor (its dashboard):
// the processor's cumulative refunded amount beyond what the payment has
// recorded, never made again.
func settleRefunded(ctx context.Context, tx pgx.Tx, o Order, idx int, refundedMinor int64, actor string) (Applied, error) {
	p := o.Payments[idx]
	delta := refundedMinor - p.RefundedMinor
	if delta <= 0 || !Refundable(p) || (o.Status != StatusCompleted && o.Status != StatusPartiallyRefunded) {
		return Applied{Order: o}, nil
	}
	ro, err := refundLocked(ctx, tx, o, idx, min(delta, p.AmountMinor-p.RefundedMinor),
		Refund{Reason: "Refunded at the payment processor.", Source: "processor"}, actor)
	if err != nil {
		return Applied{}, err
	}
	return Applied{Order: ro, Changed: true, ReleaseStock: ro.Status == StatusRefunded && len(ro.Items) > 0}, nil
}

// settleDisputed marks a payment the donor's bank disputes.
func settleDisputed(ctx context.Context, tx pgx.Tx, o Order, idx int, actor string) (Applied, error) {
	p := o.Payments[idx]
	if p.Status == PaymentDisputed {
		return Applied{Order: o}, nil
	}
	if err := setPaymentStatus(ctx, tx, o.TenantID, o.ID, p, PaymentDisputed, actor); err != nil {
		return Applied{}, err
	}
	o.Payments[idx].Status = PaymentDisputed
	return Applied{Order: o, Changed: true}, nil
}

func anyUnsettled(ps []Payment) bool {
	for _, p := range ps {
		if unsettled(p) {
			return true
		}
	}
	return false
}

// SavedMethod returns the method a token names when it is saved (not
// detached) at the processor provider for contactID. Not saved is not an
// error; a failed read is.
func (s *Store) SavedMethod(ctx context.Context, tenantID uuid.UUID, token, provider string, contactID int64) (PaymentMethod, bool, error) {
	m, err := s.GetPaymentMethod(ctx, tenantID, token)
	if errors.Is(err, db.ErrNotFound) {
		return PaymentMethod{}, false, nil
	}
	if err != nil {
		return PaymentMethod{}, false, err
	}
	return m, m.Provider == provider && m.ContactID == contactID, nil
}
