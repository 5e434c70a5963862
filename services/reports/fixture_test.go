package reports

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/testdb"
)

// fixture is a tenant with a small, hand-computed history (see
// reports_test.go for every expected figure), and another tenant whose
// rows must never show.
type fixture struct {
	pool          *pgxpool.Pool
	svc           *Service
	tenant, other uuid.UUID
	general, gala uuid.UUID
	batch         map[uuid.UUID]uuid.UUID
	num           map[uuid.UUID]int64
}

type don struct {
	fund     uuid.UUID
	name     string
	minor    int64
	deduct   bool
	campaign string
}

type itm struct {
	sku, name string
	qty       int64
	unit, fmv int64
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t.Add(12 * time.Hour)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, testMigrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := &fixture{pool: pool, tenant: uuid.New(), other: uuid.New(), general: uuid.New(), gala: uuid.New(),
		batch: map[uuid.UUID]uuid.UUID{}, num: map[uuid.UUID]int64{}}
	f.svc = New(pool, Config{Now: func() time.Time { return day("2026-06-30") }}, nil)
	for _, tn := range []uuid.UUID{f.tenant, f.other} {
		f.batch[tn] = uuid.New()
		f.exec(t, `INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'b')`, tn, f.batch[tn])
	}
	f.exec(t, `INSERT INTO orders.funds (tenant_id, id, name, is_tax_deductible) VALUES ($1, $2, 'General', true), ($1, $3, 'Gala', false)`, f.tenant, f.general, f.gala)
	otherFund := uuid.New()
	f.exec(t, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, f.other, otherFund)
	for _, c := range []struct {
		id          int64
		typ         string
		first, last string
		org         string
	}{
		{1, "Individual", "Jane", "Donor", ""},
		{2, "Organization", "", "", `Acme "Widgets", Ltd.`},
		{3, "Individual", "Zoë", "王", ""},
		{4, "Individual", "Bob", "Lapsed", ""},
		{5, "Individual", "Old", "Sybunt", ""},
		{6, "Individual", "Ray", "Recovered\nLine", ""},
	} {
		f.exec(t, `INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name, organization_name) VALUES ($1, $2, $3, nullif($4, ''), nullif($5, ''), nullif($6, ''))`,
			f.tenant, c.id+f.base(), c.typ, c.first, c.last, c.org)
	}
	f.exec(t, `INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name) VALUES ($1, $2, 'Individual', 'Other', 'Tenant')`, f.other, 99+f.base())

	g := func(minor int64, campaign string) []don { return []don{{f.general, "General", minor, true, campaign}} }
	f.order(t, f.tenant, 1, "2026-01-15", "Completed", "USD", 0, g(10000, "spring"), nil)
	f.order(t, f.tenant, 1, "2026-02-10", "PartiallyRefunded", "USD", 3000, []don{{f.general, "General", 5000, true, ""}, {f.gala, "Gala", 2500, false, ""}}, nil)
	f.order(t, f.tenant, 2, "2026-02-20", "Voided", "USD", 0, g(20000, ""), nil)
	f.order(t, f.tenant, 3, "2026-03-05", "Completed", "EUR", 0, g(4000, "spring"), nil)
	f.order(t, f.tenant, 2, "2026-01-20", "Refunded", "USD", 6000, g(6000, ""), nil)
	f.order(t, f.tenant, 4, "2025-06-01", "Completed", "USD", 0, g(8000, ""), nil)
	f.order(t, f.tenant, 1, "2025-03-01", "Completed", "USD", 0, g(1000, ""), nil)
	f.order(t, f.tenant, 5, "2024-05-05", "Completed", "USD", 0, g(7000, ""), nil)
	f.order(t, f.tenant, 3, "2026-03-05", "Completed", "USD", 0, nil, []itm{{"GALA-T", "Gala ticket", 2, 5000, 3000}})
	f.order(t, f.tenant, 6, "2024-02-02", "Completed", "USD", 0, g(2000, ""), nil)
	f.order(t, f.tenant, 6, "2026-04-01", "Completed", "USD", 0, g(1500, ""), nil)
	// The other tenant gives a lot in the same period: none of it may show.
	f.order(t, f.other, 99, "2026-01-15", "Completed", "USD", 0, []don{{otherFund, "General", 99900, true, "spring"}}, nil)

	f.exec(t, `UPDATE orders.orders SET updated_at = $2 WHERE tenant_id = $1 AND order_number = 3`, f.tenant, day("2026-02-21"))
	f.refund(t, 2, 3000, "2026-02-11", `Changed mind, "oops"`)
	f.refund(t, 5, 6000, "2026-01-21", "")

	galaItem := uuid.New()
	f.exec(t, `INSERT INTO inventory.items (tenant_id, id, sku, name, category, price_minor, currency, fair_market_value_minor, track_stock, stock_on_hand, active) VALUES
		($1, $2, 'GALA-T', 'Gala ticket', 'Events', 5000, 'USD', 3000, true, 10, true),
		($1, $3, 'TOTE', 'Tote, "large"', 'Merch', 1500, 'USD', 1500, false, 0, true),
		($1, $4, 'OLD', 'Retired', '', 100, 'USD', 0, true, 5, false),
		($5, $6, 'GALA-T', 'Other', '', 100, 'USD', 0, true, 99, true)`, f.tenant, galaItem, uuid.New(), uuid.New(), f.other, uuid.New())

	origin := uuid.New()
	for _, s := range []struct {
		contact int64
		minor   int64
		cur     string
		freq    string
		status  string
		updated string
	}{
		{1, 1000, "USD", "monthly", "active", "2026-01-01"},
		{3, 1200, "USD", "weekly", "active", "2026-01-01"},
		{4, 12000, "USD", "annually", "cancelled", "2026-03-01"},
		{6, 3000, "EUR", "quarterly", "active", "2026-01-01"},
		{5, 5000, "USD", "monthly", "cancelled", "2025-12-31"},
	} {
		f.exec(t, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, fund_id, payment_method, status, origin_order_id, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, '2025-01-01', $7, 'Card', $8, $9, $10)`, f.tenant, uuid.New(), s.contact+f.base(), s.minor, s.cur, s.freq, f.general, s.status, origin, day(s.updated))
	}
	f.exec(t, `INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, fund_id, payment_method, status, origin_order_id)
		VALUES ($1, $2, 1, 99900, 'USD', 'monthly', '2025-01-01', $3, 'Card', 'active', $4)`, f.other, uuid.New(), otherFund, origin)
	return f
}

// base offsets contact ids: fixed small ids keep the expected figures
// readable, and contacts share one id space in the schema.
func (f *fixture) base() int64 { return 0 }

func (f *fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
}

func (f *fixture) order(t *testing.T, tenant uuid.UUID, contact int64, date, status, cur string, refunded int64, dons []don, items []itm) {
	t.Helper()
	f.num[tenant]++
	id := uuid.New()
	var dsub, isub, deduct int64
	for _, d := range dons {
		dsub += d.minor
		if d.deduct {
			deduct += d.minor
		}
	}
	for _, it := range items {
		isub += it.qty * it.unit
		deduct += it.qty * (it.unit - it.fmv)
	}
	at := day(date)
	f.exec(t, `INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor, deductible_minor,
		refunded_minor, has_donations, has_items, batch_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)`,
		tenant, id, f.num[tenant], contact+f.base(), status, cur, dsub, isub, dsub+isub, deduct, refunded, len(dons) > 0, len(items) > 0, f.batch[tenant], at)
	for i, d := range dons {
		f.exec(t, `INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible, campaign_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, tenant, id, uuid.New(), i, d.fund, d.name, d.minor, d.deduct, d.campaign)
	}
	for i, it := range items {
		f.exec(t, `INSERT INTO orders.order_items (tenant_id, order_id, line_number, item_id, sku, name, quantity, unit_price_minor, fair_market_value_minor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, tenant, id, i+1, uuid.New(), it.sku, it.name, it.qty, it.unit, it.fmv)
	}
	if refunded > 0 {
		// What the orders service does in a refund's transaction: store
		// each line's share, which the report views read.
		f.exec(t, `SELECT orders.apportion_refund($1, $2)`, tenant, id)
	}
}

func (f *fixture) refund(t *testing.T, number int64, minor int64, date, reason string) {
	t.Helper()
	f.exec(t, `INSERT INTO orders.refunds (tenant_id, order_id, id, amount_minor, reason, actor, created_at)
		SELECT tenant_id, id, $3, $4, $5, 'test', $6 FROM orders.orders WHERE tenant_id = $1 AND order_number = $2`, f.tenant, number, uuid.New(), minor, reason, day(date))
}

// ctx is a call of the fixture's tenant with the given scopes.
func (f *fixture) ctx(scope ...string) context.Context {
	if scope == nil {
		scope = []string{scopes.ReportsView, scopes.ReportsExport, scopes.ReportsManage}
	}
	p := authctx.Principal{TenantID: f.tenant.String(), KeyID: "k1", KeyPrefix: "ak_test_k1", Scopes: scope}
	return authctx.NewIncomingContext(context.Background(), p)
}
