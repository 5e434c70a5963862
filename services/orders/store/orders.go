package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Order statuses.
const (
	StatusCompleted         = "Completed"
	StatusPartiallyRefunded = "PartiallyRefunded"
	StatusRefunded          = "Refunded"
	StatusVoided            = "Voided"
)

// Payment statuses.
const (
	PaymentAuthorized        = "Authorized"
	PaymentCaptured          = "Captured"
	PaymentRefunded          = "Refunded"
	PaymentPartiallyRefunded = "PartiallyRefunded"
	PaymentVoided            = "Voided"
	PaymentDeclined          = "Declined"
)

// Address is a postal address, stored as JSON.
type Address struct {
	Line1         string `json:"line1"`
	Line2         string `json:"line2"`
	City          string `json:"city"`
	StateProvince string `json:"stateProvince"`
	PostalCode    string `json:"postalCode"`
	Country       string `json:"country"`
}

// Tribute is a donation's dedication, stored as JSON.
type Tribute struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	NotifyName  string `json:"notifyName"`
	NotifyEmail string `json:"notifyEmail"`
}

// Donation is a donation line.
type Donation struct {
	ID              uuid.UUID
	FundID          uuid.UUID
	FundName        string
	AmountMinor     int64
	IsTaxDeductible bool
	CampaignID      string
	AppealID        string
	Tribute         *Tribute
}

// Item is an item line.
type Item struct {
	LineNumber           int32
	ItemID               uuid.UUID
	SKU                  string
	Name                 string
	Quantity             int32
	UnitPriceMinor       int64
	FairMarketValueMinor int64
}

// Payment is a payment of an order.
type Payment struct {
	ID                 uuid.UUID
	Method             string
	AmountMinor        int64
	RefundedMinor      int64
	Status             string
	CheckNumber        string
	Reference          string
	ProcessorReference string
}

// Order is an order with its lines.
type Order struct {
	TenantID              uuid.UUID
	ID                    uuid.UUID
	OrderNumber           int64
	ContactID             int64
	Status                string
	Currency              string
	DonationSubtotalMinor int64
	ItemSubtotalMinor     int64
	TotalMinor            int64
	DeductibleMinor       int64
	RefundedMinor         int64
	BatchID               uuid.UUID
	ScheduleID            *uuid.UUID
	ScheduleIDs           []uuid.UUID
	Billing, Shipping     *Address
	Notes                 string
	CreatedAt, UpdatedAt  time.Time
	Donations             []Donation
	Items                 []Item
	Payments              []Payment
}

// NewOrder is an order to insert, computed and validated by the caller,
// with the schedules it creates.
type NewOrder struct {
	Order
	// BatchID picks a batch; nil means the daily batch.
	RequestedBatch *uuid.UUID
	Schedules      []Schedule
	// Idempotency completes a claimed key in the same transaction; nil
	// when the request had no key.
	Idempotency *Completion
	// Now is the order's clock (the runner's injectable one).
	Now time.Time
}

// Completion is the claimed key an order completes, and how to render the
// stored response from the inserted order.
type Completion struct {
	Key    string
	Render func(Order) ([]byte, error)
}

const orderColumns = `tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor,
	total_minor, deductible_minor, refunded_minor, batch_id, schedule_id, schedule_ids, billing_address, shipping_address, notes, created_at, updated_at`

func scanOrder(row pgx.Row) (Order, error) {
	var o Order
	err := row.Scan(&o.TenantID, &o.ID, &o.OrderNumber, &o.ContactID, &o.Status, &o.Currency, &o.DonationSubtotalMinor, &o.ItemSubtotalMinor,
		&o.TotalMinor, &o.DeductibleMinor, &o.RefundedMinor, &o.BatchID, &o.ScheduleID, &o.ScheduleIDs, &o.Billing, &o.Shipping, &o.Notes, &o.CreatedAt, &o.UpdatedAt)
	return o, err
}

// CreateOrder inserts the order, its lines, payments and schedules, takes
// its number and batch, writes every audit row and completes the
// idempotency claim, all in one transaction.
func (s *Store) CreateOrder(ctx context.Context, n NewOrder, actor string) (Order, error) {
	var out Order
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = insertOrder(ctx, tx, n, actor)
		return err
	})
	return out, err
}

func insertOrder(ctx context.Context, tx pgx.Tx, n NewOrder, actor string) (Order, error) {
	o := n.Order
	tenant := o.TenantID.String()
	batchID, err := attachBatch(ctx, tx, o.TenantID, n.RequestedBatch, Day(n.Now), actor)
	if err != nil {
		return Order{}, err
	}
	o.BatchID = batchID
	o.ScheduleIDs = make([]uuid.UUID, 0, len(n.Schedules))
	for _, sc := range n.Schedules {
		o.ScheduleIDs = append(o.ScheduleIDs, sc.ID)
	}
	b := &pgx.Batch{}
	for i, d := range o.Donations {
		b.Queue(`INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible, campaign_id, appeal_id, tribute)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			o.TenantID, o.ID, d.ID, i, d.FundID, d.FundName, d.AmountMinor, d.IsTaxDeductible, d.CampaignID, d.AppealID, d.Tribute)
	}
	for _, it := range o.Items {
		b.Queue(`INSERT INTO orders.order_items (tenant_id, order_id, line_number, item_id, sku, name, quantity, unit_price_minor, fair_market_value_minor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			o.TenantID, o.ID, it.LineNumber, it.ItemID, it.SKU, it.Name, it.Quantity, it.UnitPriceMinor, it.FairMarketValueMinor)
	}
	for i, p := range o.Payments {
		b.Queue(`INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status, check_number, reference, processor_reference)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			o.TenantID, o.ID, p.ID, i, p.Method, p.AmountMinor, p.Status, p.CheckNumber, p.Reference, p.ProcessorReference)
	}
	for _, sc := range n.Schedules {
		queueInsertSchedule(b, sc)
	}
	// Audit rows: the order, then its lines in order.
	entries := []audit.Entry{{TenantID: tenant, EntityType: EntityOrder, EntityID: o.ID.String(), Action: audit.Created, Actor: actor}}
	for _, d := range o.Donations {
		entries = append(entries, audit.Entry{TenantID: tenant, EntityType: EntityOrderDonation, EntityID: d.ID.String(), Action: audit.Created, Actor: actor})
	}
	for _, p := range o.Payments {
		entries = append(entries, audit.Entry{TenantID: tenant, EntityType: EntityOrderPayment, EntityID: p.ID.String(), Action: audit.Created, Actor: actor})
	}
	if len(o.Items) > 0 && o.Shipping != nil {
		// One shipment per item order with a shipping address; it shares
		// the order's id.
		entries = append(entries, audit.Entry{TenantID: tenant, EntityType: EntityShipment, EntityID: o.ID.String(), Action: audit.Created, Actor: actor})
	}
	for _, sc := range n.Schedules {
		entries = append(entries, audit.Entry{TenantID: tenant, EntityType: EntityRecurringDonation, EntityID: sc.ID.String(), Action: audit.Created, Actor: actor})
	}
	// The number is taken last so the per-tenant counter row stays locked
	// for as short a time as possible: concurrent orders of one tenant
	// queue only on this statement and the commit.
	br := tx.SendBatch(ctx, b)
	for range b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return Order{}, err
		}
	}
	if err := br.Close(); err != nil {
		return Order{}, err
	}
	for _, e := range entries {
		if err := audit.Record(ctx, tx, e); err != nil {
			return Order{}, err
		}
	}
	if err := tx.QueryRow(ctx, `INSERT INTO orders.order_counters AS c (tenant_id, last_number) VALUES ($1, 1)
		ON CONFLICT (tenant_id) DO UPDATE SET last_number = c.last_number + 1 RETURNING last_number`, o.TenantID).Scan(&o.OrderNumber); err != nil {
		return Order{}, err
	}
	saved, err := scanOrder(tx.QueryRow(ctx, `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency,
			donation_subtotal_minor, item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, schedule_id,
			schedule_ids, billing_address, shipping_address, notes, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19)
		RETURNING `+orderColumns,
		o.TenantID, o.ID, o.OrderNumber, o.ContactID, o.Status, o.Currency, o.DonationSubtotalMinor, o.ItemSubtotalMinor, o.TotalMinor,
		o.DeductibleMinor, len(o.Donations) > 0, len(o.Items) > 0, o.BatchID, o.ScheduleID, o.ScheduleIDs, o.Billing, o.Shipping, o.Notes, n.Now))
	if err != nil {
		return Order{}, err
	}
	saved.Donations, saved.Items, saved.Payments = o.Donations, o.Items, o.Payments
	for i := range saved.Payments {
		saved.Payments[i].Status = o.Payments[i].Status
	}
	if n.Idempotency != nil {
		resp, err := n.Idempotency.Render(saved)
		if err != nil {
			return Order{}, err
		}
		tag, err := tx.Exec(ctx, `UPDATE orders.idempotency_keys SET state = 'completed', response = $4
			WHERE tenant_id = $1 AND key = $2 AND order_id = $3 AND state = 'pending'`, o.TenantID, n.Idempotency.Key, o.ID, resp)
		if err != nil {
			return Order{}, err
		}
		if tag.RowsAffected() != 1 {
			return Order{}, ErrClaimLost
		}
	}
	return saved, nil
}

// GetOrder reads one order with its lines.
func (s *Store) GetOrder(ctx context.Context, tenantID, id uuid.UUID) (Order, error) {
	o, err := scanOrder(s.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders.orders WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if db.IsNoRows(err) {
		return Order{}, ErrNotFound
	}
	if err != nil {
		return Order{}, err
	}
	os := []Order{o}
	if err := loadLines(ctx, s.pool, tenantID, os); err != nil {
		return Order{}, err
	}
	return os[0], nil
}

// loadLines fills the orders' donations, items and payments with three
// queries for the whole page.
func loadLines(ctx context.Context, q querier, tenantID uuid.UUID, os []Order) error {
	if len(os) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(os))
	idx := make(map[uuid.UUID]int, len(os))
	for i, o := range os {
		ids[i], idx[o.ID] = o.ID, i
		os[i].Donations, os[i].Items, os[i].Payments = []Donation{}, []Item{}, []Payment{}
	}
	rows, err := q.Query(ctx, `SELECT order_id, id, fund_id, fund_name, amount_minor, is_tax_deductible, campaign_id, appeal_id, tribute
		FROM orders.order_donations WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, position`, tenantID, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var oid uuid.UUID
		var d Donation
		if err := rows.Scan(&oid, &d.ID, &d.FundID, &d.FundName, &d.AmountMinor, &d.IsTaxDeductible, &d.CampaignID, &d.AppealID, &d.Tribute); err != nil {
			rows.Close()
			return err
		}
		os[idx[oid]].Donations = append(os[idx[oid]].Donations, d)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT order_id, line_number, item_id, sku, name, quantity, unit_price_minor, fair_market_value_minor
		FROM orders.order_items WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, line_number`, tenantID, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var oid uuid.UUID
		var it Item
		if err := rows.Scan(&oid, &it.LineNumber, &it.ItemID, &it.SKU, &it.Name, &it.Quantity, &it.UnitPriceMinor, &it.FairMarketValueMinor); err != nil {
			rows.Close()
			return err
		}
		os[idx[oid]].Items = append(os[idx[oid]].Items, it)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.Query(ctx, `SELECT order_id, id, method, amount_minor, refunded_minor, status, check_number, reference, processor_reference
		FROM orders.order_payments WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, position`, tenantID, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var oid uuid.UUID
		var p Payment
		if err := rows.Scan(&oid, &p.ID, &p.Method, &p.AmountMinor, &p.RefundedMinor, &p.Status, &p.CheckNumber, &p.Reference, &p.ProcessorReference); err != nil {
			rows.Close()
			return err
		}
		os[idx[oid]].Payments = append(os[idx[oid]].Payments, p)
	}
	return rows.Err()
}
