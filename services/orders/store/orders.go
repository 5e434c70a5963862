package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/counter"
	"github.com/almoner/almoner/pkg/db"
)

// Order statuses. Pending waits for a processor's notification (a bank
// debit, 3-D Secure) and becomes Completed or Failed; only Completed and
// PartiallyRefunded orders count in any figure.
const (
	StatusPending           = "Pending"
	StatusFailed            = "Failed"
	StatusCompleted         = "Completed"
	StatusPartiallyRefunded = "PartiallyRefunded"
	StatusRefunded          = "Refunded"
	StatusVoided            = "Voided"
)

// Payment statuses. Pending and RequiresAction are processor payments
// that have not settled; Failed ones never will; Disputed ones are
// contested by the donor's bank.
const (
	PaymentPending           = "Pending"
	PaymentRequiresAction    = "RequiresAction"
	PaymentFailed            = "Failed"
	PaymentDisputed          = "Disputed"
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
	// Processor collected the payment: "" (not us), "test" or "stripe".
	Processor string
	// ClientSecret lets the donor's browser finish a RequiresAction
	// payment. It is not stored with the payment: only the create response
	// (and its idempotent replays) carry it.
	ClientSecret string
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
	// Number is the order number when the caller took it already (an order
	// charged at a processor carries its number in the charge's metadata);
	// 0 lets CreateOrder take one.
	Number int64
	// SavedMethods are payment methods the donor asked to keep, written
	// with the order.
	SavedMethods []PaymentMethod
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
	if err != nil {
		return Order{}, fmt.Errorf("read order: %w", db.Interpret(err))
	}
	return o, nil
}

// CreateOrder records an order made through the API: its daily (or
// requested) batch and its number are settled first, each without holding
// a lock across a round trip, then the order, its lines, payments,
// schedules, every audit row and the idempotency completion are sent as
// one pipelined batch, which PostgreSQL runs as one implicit transaction:
// one round trip, all or nothing (docs/orders.md, "Creating an order:
// round trips and locks").
func (s *Store) CreateOrder(ctx context.Context, n NewOrder, actor string) (Order, error) {
	day := Day(n.Now)
	// The number comes from this process's block of the tenant's numbers
	// (no round trip but once per block), before the batch: the
	// idempotency record holds the rendered answer, number included.
	number := n.Number
	if number == 0 {
		var err error
		if number, err = s.nextOrderNumber(ctx, n.TenantID); err != nil {
			return Order{}, fmt.Errorf("orders: create order: %w", err)
		}
	}
	// A daily batch closed by staff after it was looked up makes the
	// order's INSERT fail; the next round opens the day's next one. A
	// named batch that is closed is the caller's error.
	for range 3 {
		batchID, err := s.batchFor(ctx, n.TenantID, n.RequestedBatch, day, actor)
		if err != nil {
			return Order{}, fmt.Errorf("orders: create order: %w", err)
		}
		out, err := writeOrder(ctx, s.pool, n, batchID, number, actor)
		if err == nil {
			return out, nil
		}
		if errors.Is(err, errContactMoved) {
			if n, err = s.forSurvivor(ctx, n); err != nil {
				return Order{}, fmt.Errorf("orders: create order: %w", err)
			}
			continue
		}
		if !errors.Is(err, errBatchNotOpen) {
			return Order{}, fmt.Errorf("orders: create order: %w", err)
		}
		if n.RequestedBatch != nil {
			return Order{}, fmt.Errorf("orders: create order: %w", s.batchError(ctx, n.TenantID, batchID))
		}
		s.daily.forget(n.TenantID, day)
	}
	return Order{}, fmt.Errorf("orders: create order: the daily batch closed three times: %w", ErrBatchClosed)
}

// InsertOrder records an order inside tx, the recurring runner's
// transaction that also records the charged period. The batch is locked
// up front because the runner's transaction holds other locks too.
//
// The number comes from number, reserved before tx began
// (RecordInstallment), not from nextOrderNumber: refilling the tenant's
// block needs a second pooled connection while this transaction holds one
// and its locks, and requests waiting behind those locks with every other
// connection could then keep it from ever getting one. The counter row is
// never locked by tx, so API orders of the tenant never wait for the
// installment.
func (s *Store) InsertOrder(ctx context.Context, tx pgx.Tx, n NewOrder, number *counter.Reservation, actor string) (Order, error) {
	batchID, err := attachBatch(ctx, tx, n.TenantID, n.RequestedBatch, Day(n.Now), actor)
	if err != nil {
		return Order{}, err
	}
	num := n.Number
	if num == 0 {
		if num, err = number.Next(); err != nil {
			return Order{}, fmt.Errorf("take reserved order number: %w", err)
		}
	}
	o, err := writeOrder(ctx, tx, n, batchID, num, actor)
	if errors.Is(err, errBatchNotOpen) {
		// attachBatch holds a key-share lock, so the batch cannot have
		// closed since; kept for completeness.
		return Order{}, fmt.Errorf("batch %s: %w", batchID, ErrBatchClosed)
	}
	return o, err
}

// forSurvivor is n for the contact its contact was merged into.
func (s *Store) forSurvivor(ctx context.Context, n NewOrder) (NewOrder, error) {
	survivor, err := s.ContactSurvivor(ctx, n.TenantID, n.ContactID)
	if err != nil {
		return n, err
	}
	n.ContactID = survivor
	n.Schedules = slices.Clone(n.Schedules)
	for i := range n.Schedules {
		n.Schedules[i].ContactID = survivor
	}
	n.SavedMethods = slices.Clone(n.SavedMethods)
	for i := range n.SavedMethods {
		n.SavedMethods[i].ContactID = survivor
	}
	return n, nil
}

// errBatchNotOpen: the order's batch was not open (or not there) when the
// order row was written; the caller works out which.
var errBatchNotOpen = errors.New("batch not open")

// errContactMoved: a keyed order's contact was merged into another after
// its answer was rendered; the order is written again for the survivor.
var errContactMoved = errors.New("contact merged while the order was on its way")

// batchSender is a pool (whose SendBatch runs the batch as one implicit
// transaction) or a transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// writeOrder sends the order with everything it writes as one batch on
// q: one round trip whatever the number of lines, payments, schedules and
// audit rows, the order numbered number. Every failure is an error of a
// statement, which aborts the whole batch, so nothing of it stays when one
// statement fails, whether q is the pool's implicit transaction or the
// caller's. The order row goes first and takes a key-share lock on its
// batch only if the batch is open, so a closed batch stops the batch at
// its first statement and CloseBatch (FOR UPDATE) waits for orders being
// added. The order returned is built from what was written, rendered for
// the idempotency record before sending, so the record and the order
// commit together.
func writeOrder(ctx context.Context, q batchSender, n NewOrder, batchID uuid.UUID, number int64, actor string) (Order, error) {
	o := orderAsWritten(n, batchID, number)
	var resp []byte
	if n.Idempotency != nil {
		var err error
		if resp, err = n.Idempotency.Render(o); err != nil {
			return Order{}, fmt.Errorf("render the idempotent answer: %w", err)
		}
	}
	b := &pgx.Batch{}
	queueOrderRows(b, n, o)
	if err := audit.QueueAll(ctx, b, orderAudit(n, o, actor)); err != nil {
		return Order{}, fmt.Errorf("queue audit: %w", err)
	}
	if n.Idempotency != nil {
		// The claim must still be this request's. A claim found otherwise
		// has to fail the statement, not just update nothing, for the
		// batch to be undone: with no row, count(*) is 0 and the division
		// raises division_by_zero, read below as ErrClaimLost.
		b.Queue(`WITH done AS (UPDATE orders.idempotency_keys SET state = 'completed', response = $4
				WHERE tenant_id = $1 AND key = $2 AND order_id = $3 AND state = 'pending' RETURNING 1)
			SELECT 1 / count(*)::integer FROM done`, o.TenantID, n.Idempotency.Key, o.ID, resp)
	}
	contact, err := sendOrder(ctx, q, b, n.Idempotency != nil)
	if err != nil {
		return Order{}, err
	}
	// A merge that committed while the order was on its way moved its
	// contact: the row is the survivor's. (A keyed request's stored answer
	// was rendered before and names the contact requested.)
	o.ContactID = contact
	return o, nil
}

// orderAsWritten is the order as its rows will read back: its batch, its
// number, the stored time (PostgreSQL keeps microseconds) and the
// schedules it creates.
func orderAsWritten(n NewOrder, batchID uuid.UUID, number int64) Order {
	o := n.Order
	o.BatchID, o.OrderNumber = batchID, number
	o.CreatedAt = n.Now.Truncate(time.Microsecond)
	o.UpdatedAt, o.RefundedMinor = o.CreatedAt, 0
	o.ScheduleIDs = make([]uuid.UUID, 0, len(n.Schedules))
	for _, sc := range n.Schedules {
		o.ScheduleIDs = append(o.ScheduleIDs, sc.ID)
	}
	return o
}

// queueOrderRows queues the order row first, then its lines, payments,
// saved methods and schedules. A batch that is not open makes the order
// row's batch subquery NULL and the NOT NULL batch_id fails the first
// statement (errBatchNotOpen). The order row names its contact through
// contactForWrite (a merged contact's survivor, under its shared lock
// until the batch commits) and answers the contact it was written under.
// A keyed order's answer was rendered before the batch, so its contact
// must be the one written: one moved by a merge since makes the contact
// NULL, which fails the first statement too (errContactMoved).
func queueOrderRows(b *pgx.Batch, n NewOrder, o Order) {
	b.Queue(`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency,
			donation_subtotal_minor, item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, schedule_id,
			schedule_ids, billing_address, shipping_address, notes, created_at, updated_at)
		VALUES ($1, $2, $3, (SELECT CASE WHEN NOT $20::boolean OR w.id = $4 THEN w.id END FROM (SELECT `+contactForWrite("$1", "$4")+` AS id) w),
			$5, $6, $7, $8, $9, $10, $11, $12,
			(SELECT id FROM orders.batches WHERE tenant_id = $1 AND id = $13 AND state = 'Open' FOR KEY SHARE),
			$14, $15, $16, $17, $18, $19, $19)
		RETURNING contact_id`,
		o.TenantID, o.ID, o.OrderNumber, o.ContactID, o.Status, o.Currency, o.DonationSubtotalMinor, o.ItemSubtotalMinor, o.TotalMinor,
		o.DeductibleMinor, len(o.Donations) > 0, len(o.Items) > 0, o.BatchID, o.ScheduleID, o.ScheduleIDs, o.Billing, o.Shipping, o.Notes, o.CreatedAt,
		n.Idempotency != nil)
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
		b.Queue(`INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status, check_number, reference, processor_reference, processor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			o.TenantID, o.ID, p.ID, i, p.Method, p.AmountMinor, p.Status, p.CheckNumber, p.Reference, p.ProcessorReference, p.Processor)
	}
	for _, pm := range n.SavedMethods {
		queueSaveMethod(b, pm)
	}
	for _, sc := range n.Schedules {
		queueInsertSchedule(b, sc)
	}
	queueShipmentRequest(b, o)
}

// orderAudit is the order's audit rows: the order, then its lines in
// order, its shipment, schedules and saved methods.
func orderAudit(n NewOrder, o Order, actor string) []audit.Entry {
	tenant := o.TenantID.String()
	created := func(entity, id string) audit.Entry {
		return audit.Entry{TenantID: tenant, EntityType: entity, EntityID: id, Action: audit.Created, Actor: actor}
	}
	entries := []audit.Entry{created(EntityOrder, o.ID.String())}
	for _, d := range o.Donations {
		entries = append(entries, created(EntityOrderDonation, d.ID.String()))
	}
	for _, p := range o.Payments {
		entries = append(entries, created(EntityOrderPayment, p.ID.String()))
	}
	if NeedsShipment(o) {
		// One shipment per item order with a shipping address; it shares
		// the order's id. The inventory service creates it from the
		// shipment request this batch writes (shipments.go).
		entries = append(entries, created(EntityShipment, o.ID.String()))
	}
	for _, sc := range n.Schedules {
		entries = append(entries, created(EntityRecurringDonation, sc.ID.String()))
	}
	for _, pm := range n.SavedMethods {
		entries = append(entries, created(EntityPaymentMethod, pm.ID))
	}
	return entries
}

// sendOrder sends the batch and reads every statement's result and the
// contact the order row was written under: the first statement failing on
// its batch is errBatchNotOpen, the last on its claim (keyed)
// ErrClaimLost.
func sendOrder(ctx context.Context, q batchSender, b *pgx.Batch, keyed bool) (int64, error) {
	br := q.SendBatch(ctx, b)
	var contact int64
	for i := range b.Len() {
		var err error
		if i == 0 {
			err = br.QueryRow().Scan(&contact)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			var pe *pgconn.PgError
			switch {
			case i == 0 && errors.As(err, &pe) && pe.Code == notNullViolation && pe.ColumnName == "batch_id":
				return 0, errBatchNotOpen
			case i == 0 && errors.As(err, &pe) && pe.Code == notNullViolation && pe.ColumnName == "contact_id":
				return 0, errContactMoved
			case keyed && i == b.Len()-1 && errors.As(err, &pe) && pe.Code == divisionByZero:
				return 0, ErrClaimLost
			}
			return 0, fmt.Errorf("write order (statement %d): %w", i, err)
		}
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("write order: %w", err)
	}
	return contact, nil
}

// SQLSTATEs writeOrder reads: a NULL in a NOT NULL column, and the
// division by zero of a lost idempotency claim.
const (
	notNullViolation = "23502"
	divisionByZero   = "22012"
)

// GetOrder reads one order with its lines.
func (s *Store) GetOrder(ctx context.Context, tenantID, id uuid.UUID) (Order, error) {
	o, err := scanOrder(s.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders.orders WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return Order{}, fmt.Errorf("orders: get order %s: %w", id, err)
	}
	os := []Order{o}
	if err := loadLines(ctx, s.pool, tenantID, os); err != nil {
		return Order{}, fmt.Errorf("orders: get order %s: %w", id, err)
	}
	return os[0], nil
}

// loadLines fills the orders' donations, items and payments with three
// queries for the whole page.
func loadLines(ctx context.Context, q Querier, tenantID uuid.UUID, os []Order) error {
	if len(os) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(os))
	idx := make(map[uuid.UUID]int, len(os))
	for i, o := range os {
		ids[i], idx[o.ID] = o.ID, i
		os[i].Donations, os[i].Items, os[i].Payments = []Donation{}, []Item{}, []Payment{}
	}
	var oid uuid.UUID
	if err := eachLine(ctx, q, "order donations", `SELECT order_id, id, fund_id, fund_name, amount_minor, is_tax_deductible, campaign_id, appeal_id, tribute
		FROM orders.order_donations WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, position`, tenantID, ids, func(r pgx.Rows) error {
		var d Donation
		err := r.Scan(&oid, &d.ID, &d.FundID, &d.FundName, &d.AmountMinor, &d.IsTaxDeductible, &d.CampaignID, &d.AppealID, &d.Tribute)
		os[idx[oid]].Donations = append(os[idx[oid]].Donations, d)
		return err
	}); err != nil {
		return err
	}
	if err := eachLine(ctx, q, "order items", `SELECT order_id, line_number, item_id, sku, name, quantity, unit_price_minor, fair_market_value_minor
		FROM orders.order_items WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, line_number`, tenantID, ids, func(r pgx.Rows) error {
		var it Item
		err := r.Scan(&oid, &it.LineNumber, &it.ItemID, &it.SKU, &it.Name, &it.Quantity, &it.UnitPriceMinor, &it.FairMarketValueMinor)
		os[idx[oid]].Items = append(os[idx[oid]].Items, it)
		return err
	}); err != nil {
		return err
	}
	return eachLine(ctx, q, "order payments", `SELECT order_id, id, method, amount_minor, refunded_minor, status, check_number, reference, processor_reference, processor
		FROM orders.order_payments WHERE tenant_id = $1 AND order_id = ANY($2) ORDER BY order_id, position`, tenantID, ids, func(r pgx.Rows) error {
		var p Payment
		err := r.Scan(&oid, &p.ID, &p.Method, &p.AmountMinor, &p.RefundedMinor, &p.Status, &p.CheckNumber, &p.Reference, &p.ProcessorReference, &p.Processor)
		os[idx[oid]].Payments = append(os[idx[oid]].Payments, p)
		return err
	})
}

// eachLine reads the lines of the orders ids with sql (its parameters the
// tenant and ids), calling add for each row; what names them in errors.
// A scan that fails stops the read: its error is returned, and what add
// appended is never used.
func eachLine(ctx context.Context, q Querier, what, sql string, tenantID uuid.UUID, ids []uuid.UUID, add func(pgx.Rows) error) error {
	rows, err := q.Query(ctx, sql, tenantID, ids)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := add(rows); err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// ViaProcessor reports whether a payment method is collected by a
// payment processor (Card, Ach) rather than recorded as received.
func ViaProcessor(method string) bool { return method == "Card" || method == "Ach" }

// PaymentID is the id of payment i of an order: derived from the order
// id, so the retry of a keyed request (same order id) names the same
// payment in the charge it repeats.
func PaymentID(orderID uuid.UUID, i int) uuid.UUID {
	return uuid.NewSHA1(orderID, []byte("payment/"+strconv.Itoa(i)))
}
