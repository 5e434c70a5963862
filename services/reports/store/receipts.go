package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Order is what a receipt reads of an order, from the views orders
// publishes: its header, its donation lines and its item lines, each net
// of its share of the order's refunds.
type Order struct {
	ID          uuid.UUID
	Number      int64
	ContactID   int64
	CreatedAt   time.Time
	Status      string
	Currency    string
	Donations   []DonationLine
	Items       []ItemLine
	RefundMinor int64
}

// DonationLine is one donation line of an order.
type DonationLine struct {
	FundName   string
	Deductible bool
	NetMinor   int64
}

// ItemLine is one item line of an order.
type ItemLine struct {
	Name                 string
	Quantity             int64
	FairMarketValueMinor int64
	NetMinor             int64
}

// Donor is a contact as documents print it.
type Donor struct {
	ContactID int64
	Name      string
	// FirstName and LastName are a person's (empty for an organization):
	// a letter's merge fields.
	FirstName string
	LastName  string
	Email     string
	// Address is the contact's primary address; nil when it has none.
	Address *Address
}

// Order reads an order with its lines; db.ErrNotFound when the tenant has
// no such order.
func (s *Store) Order(ctx context.Context, tenantID, orderID uuid.UUID) (Order, error) {
	o := Order{ID: orderID}
	err := s.pool.QueryRow(ctx, `SELECT order_number, contact_id, created_at, status, currency, refunded_minor
		FROM orders.report_orders_v1 WHERE tenant_id = $1 AND order_id = $2`, tenantID, orderID).
		Scan(&o.Number, &o.ContactID, &o.CreatedAt, &o.Status, &o.Currency, &o.RefundMinor)
	if err != nil {
		return o, fmt.Errorf("reports: get order %s: %w", orderID, db.Interpret(err))
	}
	rows, _ := s.pool.Query(ctx, `SELECT fund_name, is_tax_deductible, net_amount_minor FROM orders.report_donations_v1
		WHERE tenant_id = $1 AND order_id = $2 ORDER BY donation_id`, tenantID, orderID)
	o.Donations, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (DonationLine, error) {
		var d DonationLine
		return d, r.Scan(&d.FundName, &d.Deductible, &d.NetMinor)
	})
	if err != nil {
		return o, fmt.Errorf("reports: get order %s: donations: %w", orderID, err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT name, quantity, fair_market_value_minor, net_amount_minor FROM orders.report_order_items_v1
		WHERE tenant_id = $1 AND order_id = $2 ORDER BY line_number`, tenantID, orderID)
	o.Items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ItemLine, error) {
		var i ItemLine
		return i, r.Scan(&i.Name, &i.Quantity, &i.FairMarketValueMinor, &i.NetMinor)
	})
	if err != nil {
		return o, fmt.Errorf("reports: get order %s: items: %w", orderID, err)
	}
	return o, nil
}

// Donor reads a contact's name, primary email and primary address;
// db.ErrNotFound when the tenant has no such contact.
func (s *Store) Donor(ctx context.Context, tenantID uuid.UUID, contactID int64) (Donor, error) {
	d := Donor{ContactID: contactID}
	var email, line1 *string
	var a Address
	err := s.pool.QueryRow(ctx, `SELECT m.display_name, m.email, m.line1, m.line2, m.city, m.state_province, m.postal_code, m.country,
			coalesce(c.first_name, ''), coalesce(c.last_name, '')
		FROM contacts.report_contact_mailing_v1 m
		LEFT JOIN contacts.report_contacts_v1 c ON c.tenant_id = m.tenant_id AND c.contact_id = m.contact_id
		WHERE m.tenant_id = $1 AND m.contact_id = $2`, tenantID, contactID).
		Scan(&d.Name, &email, &line1, &a.Line2, &a.City, &a.StateProvince, &a.PostalCode, &a.Country, &d.FirstName, &d.LastName)
	if err != nil {
		return d, fmt.Errorf("reports: get donor %d: %w", contactID, db.Interpret(err))
	}
	if email != nil {
		d.Email = *email
	}
	if line1 != nil {
		a.Line1 = *line1
		d.Address = &a
	}
	return d, nil
}

// Document kinds of issued_documents.
const (
	KindReceipt   = "receipt"
	KindStatement = "statement"
)

// Issued is a document's record: its number, its revision and when it was
// first and last issued.
type Issued struct {
	Number        int64
	Revision      int
	FirstIssuedAt time.Time
	IssuedAt      time.Time
}

// Corrected reports whether the document is a correction of an earlier
// issue.
func (i Issued) Corrected() bool { return i.Revision > 1 }

// Issue records that the document of kind about subject was issued with
// the figures whose hash is hash, and returns its record. The first issue
// takes the tenant's next number of that kind; a later one with the same
// hash changes nothing; one with another hash is a new revision (the
// figures changed: a refund, a void). The first issue and every revision
// write their audit row (ReceiptDocument or StatementDocument).
func (s *Store) Issue(ctx context.Context, tenantID uuid.UUID, kind, subject string, hash []byte, actor string) (Issued, error) {
	var out Issued
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = issue(ctx, tx, tenantID, kind, subject, hash, actor)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("reports: issue %s %s: %w", kind, subject, err)
	}
	return out, nil
}

func issue(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind, subject string, hash []byte, actor string) (Issued, error) {
	out, old, err := lockIssued(ctx, tx, tenantID, kind, subject)
	if errors.Is(err, db.ErrNotFound) {
		// Serialize first issues of the tenant's documents of this kind on
		// the counter row, then look again: a concurrent first issue of
		// the same document has committed by the time the lock is ours,
		// and must not take a second number.
		if err := lockCounter(ctx, tx, tenantID, kind); err != nil {
			return out, err
		}
		out, old, err = lockIssued(ctx, tx, tenantID, kind, subject)
		if errors.Is(err, db.ErrNotFound) {
			return firstIssue(ctx, tx, tenantID, kind, subject, hash, actor)
		}
	}
	if err != nil {
		return out, err
	}
	if string(old) == string(hash) {
		return out, nil
	}
	err = tx.QueryRow(ctx, `UPDATE reports.issued_documents SET revision = revision + 1, content_hash = $4, issued_at = now()
		WHERE tenant_id = $1 AND kind = $2 AND subject = $3 RETURNING revision, issued_at`, tenantID, kind, subject, hash).Scan(&out.Revision, &out.IssuedAt)
	if err != nil {
		return out, fmt.Errorf("revise document: %w", err)
	}
	return out, recordIssue(ctx, tx, tenantID, kind, subject, audit.Updated, map[string]audit.Change{"Revision": {Old: out.Revision - 1, New: out.Revision}}, actor)
}

// lockIssued reads and locks a document's record; db.ErrNotFound when it
// was never issued.
func lockIssued(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind, subject string) (Issued, []byte, error) {
	var out Issued
	var hash []byte
	err := tx.QueryRow(ctx, `SELECT number, revision, first_issued_at, issued_at, content_hash FROM reports.issued_documents
		WHERE tenant_id = $1 AND kind = $2 AND subject = $3 FOR UPDATE`, tenantID, kind, subject).
		Scan(&out.Number, &out.Revision, &out.FirstIssuedAt, &out.IssuedAt, &hash)
	if err != nil {
		return out, nil, fmt.Errorf("lock document: %w", db.Interpret(err))
	}
	return out, hash, nil
}

func lockCounter(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO reports.document_counters (tenant_id, kind, last_value) VALUES ($1, $2, 0)
		ON CONFLICT (tenant_id, kind) DO NOTHING`, tenantID, kind); err != nil {
		return fmt.Errorf("create counter: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM reports.document_counters WHERE tenant_id = $1 AND kind = $2 FOR UPDATE`, tenantID, kind); err != nil {
		return fmt.Errorf("lock counter: %w", err)
	}
	return nil
}

func firstIssue(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind, subject string, hash []byte, actor string) (Issued, error) {
	var out Issued
	err := tx.QueryRow(ctx, `WITH n AS (UPDATE reports.document_counters SET last_value = last_value + 1
			WHERE tenant_id = $1 AND kind = $2 RETURNING last_value)
		INSERT INTO reports.issued_documents (tenant_id, kind, subject, number, content_hash)
		SELECT $1, $2, $3, last_value, $4 FROM n RETURNING number, revision, first_issued_at, issued_at`, tenantID, kind, subject, hash).
		Scan(&out.Number, &out.Revision, &out.FirstIssuedAt, &out.IssuedAt)
	if err != nil {
		return out, fmt.Errorf("record document: %w", err)
	}
	return out, recordIssue(ctx, tx, tenantID, kind, subject, audit.Created, nil, actor)
}

// documentEntity is the audit entity of a document kind.
var documentEntity = map[string]string{KindReceipt: "ReceiptDocument", KindStatement: "StatementDocument"}

func recordIssue(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind, subject, action string, ch map[string]audit.Change, actor string) error {
	e := audit.Entry{TenantID: tenantID.String(), EntityType: documentEntity[kind], EntityID: subject, Action: action, Changes: ch, Actor: actor}
	if err := audit.Record(ctx, tx, e); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// ContactOrders reads a contact's standing orders (Completed,
// PartiallyRefunded) created in [from, to), oldest first, with their
// lines: a giving statement's orders. Voided and fully refunded orders are
// left out, as in every giving figure.
func (s *Store) ContactOrders(ctx context.Context, tenantID uuid.UUID, contactID int64, from, to time.Time) ([]Order, error) {
	rows, _ := s.pool.Query(ctx, `SELECT order_id, order_number, contact_id, created_at, status, currency, refunded_minor
		FROM orders.report_orders_v1 WHERE tenant_id = $1 AND contact_id = $2 AND status IN ('Completed', 'PartiallyRefunded')
			AND created_at >= $3 AND created_at < $4
		ORDER BY created_at, order_number`, tenantID, contactID, from, to)
	orders, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) {
		var o Order
		return o, r.Scan(&o.ID, &o.Number, &o.ContactID, &o.CreatedAt, &o.Status, &o.Currency, &o.RefundMinor)
	})
	if err != nil {
		return nil, fmt.Errorf("reports: orders of contact %d: %w", contactID, err)
	}
	if err := orderLines(ctx, s.pool, tenantID, orders); err != nil {
		return nil, fmt.Errorf("reports: orders of contact %d: %w", contactID, err)
	}
	return orders, nil
}

// orderLines fills in the donation and item lines of orders, two queries
// for all of them.
func orderLines(ctx context.Context, q *pgxpool.Pool, tenantID uuid.UUID, orders []Order) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(orders))
	at := make(map[uuid.UUID]int, len(orders))
	for i, o := range orders {
		ids[i], at[o.ID] = o.ID, i
	}
	rows, _ := q.Query(ctx, `SELECT order_id, fund_name, is_tax_deductible, net_amount_minor FROM orders.report_donations_v1
		WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, donation_id`, tenantID, ids)
	var id uuid.UUID
	var d DonationLine
	if _, err := pgx.ForEachRow(rows, []any{&id, &d.FundName, &d.Deductible, &d.NetMinor}, func() error {
		orders[at[id]].Donations = append(orders[at[id]].Donations, d)
		return nil
	}); err != nil {
		return fmt.Errorf("donations: %w", err)
	}
	rows, _ = q.Query(ctx, `SELECT order_id, name, quantity, fair_market_value_minor, net_amount_minor FROM orders.report_order_items_v1
		WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, line_number`, tenantID, ids)
	var it ItemLine
	if _, err := pgx.ForEachRow(rows, []any{&id, &it.Name, &it.Quantity, &it.FairMarketValueMinor, &it.NetMinor}, func() error {
		orders[at[id]].Items = append(orders[at[id]].Items, it)
		return nil
	}); err != nil {
		return fmt.Errorf("items: %w", err)
	}
	return nil
}

// Donors reads many contacts as Donor does, by contact id; a contact the
// tenant does not have is absent from the answer.
//
// A year-end run's reading phase: it reads through the read replica
// within its lag bound (docs/scaling.md), as ContactsOrders does.
func (s *Store) Donors(ctx context.Context, tenantID uuid.UUID, contactIDs []int64) (map[int64]Donor, error) {
	var out map[int64]Donor
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		var err error
		out, err = donors(ctx, p, tenantID, contactIDs)
		return err
	})
	return out, err
}

func donors(ctx context.Context, q *pgxpool.Pool, tenantID uuid.UUID, contactIDs []int64) (map[int64]Donor, error) {
	rows, _ := q.Query(ctx, `SELECT m.contact_id, m.display_name, m.email, m.line1, m.line2, m.city, m.state_province, m.postal_code,
			m.country, coalesce(c.first_name, ''), coalesce(c.last_name, '')
		FROM contacts.report_contact_mailing_v1 m
		LEFT JOIN contacts.report_contacts_v1 c ON c.tenant_id = m.tenant_id AND c.contact_id = m.contact_id
		WHERE m.tenant_id = $1 AND m.contact_id = ANY($2)`, tenantID, contactIDs)
	out := make(map[int64]Donor, len(contactIDs))
	var d Donor
	var email, line1 *string
	var a Address
	_, err := pgx.ForEachRow(rows, []any{&d.ContactID, &d.Name, &email, &line1, &a.Line2, &a.City, &a.StateProvince, &a.PostalCode, &a.Country,
		&d.FirstName, &d.LastName}, func() error {
		dd := d
		if email != nil {
			dd.Email = *email
		}
		if line1 != nil {
			addr := a
			addr.Line1 = *line1
			dd.Address = &addr
		}
		out[d.ContactID] = dd
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reports: get %d donors: %w", len(contactIDs), err)
	}
	return out, nil
}

// ContactsOrders reads the standing orders in [from, to) of many
// contacts, as ContactOrders does for one, by contact id.
func (s *Store) ContactsOrders(ctx context.Context, tenantID uuid.UUID, contactIDs []int64, from, to time.Time) (map[int64][]Order, error) {
	var out map[int64][]Order
	err := s.reads.Do(ctx, func(p *pgxpool.Pool) error {
		var err error
		out, err = contactsOrders(ctx, p, tenantID, contactIDs, from, to)
		return err
	})
	return out, err
}

func contactsOrders(ctx context.Context, q *pgxpool.Pool, tenantID uuid.UUID, contactIDs []int64, from, to time.Time) (map[int64][]Order, error) {
	rows, _ := q.Query(ctx, `SELECT order_id, order_number, contact_id, created_at, status, currency, refunded_minor
		FROM orders.report_orders_v1 WHERE tenant_id = $1 AND contact_id = ANY($2) AND status IN ('Completed', 'PartiallyRefunded')
			AND created_at >= $3 AND created_at < $4
		ORDER BY contact_id, created_at, order_number`, tenantID, contactIDs, from, to)
	orders, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) {
		var o Order
		return o, r.Scan(&o.ID, &o.Number, &o.ContactID, &o.CreatedAt, &o.Status, &o.Currency, &o.RefundMinor)
	})
	if err == nil {
		err = orderLines(ctx, q, tenantID, orders)
	}
	if err != nil {
		return nil, fmt.Errorf("reports: orders of %d contacts: %w", len(contactIDs), err)
	}
	out := make(map[int64][]Order, len(contactIDs))
	for _, o := range orders {
		out[o.ContactID] = append(out[o.ContactID], o)
	}
	return out, nil
}
