package orders

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store/importstore"
)

// fixedTenants answers one default currency for every tenant.
type fixedTenants string

func (f fixedTenants) DefaultCurrency(context.Context, string) (string, error) { return string(f), nil }

// importFixture is a tenant with the funds General, Building and an
// inactive Old, the import service and the runner's System principal.
type importFixture struct {
	pool     *pgxpool.Pool
	tenant   uuid.UUID
	importID uuid.UUID
	funds    map[string]uuid.UUID
	srv      *giftImportServer
	giving   *givingServer
	ctx      context.Context
}

func newImportFixture(t testing.TB) *importFixture {
	t.Helper()
	ctx := context.Background()
	pool := testPool(t)
	f := &importFixture{pool: pool, tenant: uuid.Must(uuid.NewV7()), importID: uuid.Must(uuid.NewV7()), funds: map[string]uuid.UUID{}}
	for _, name := range []string{"General", "Building", "Old"} {
		f.funds[name] = uuid.Must(uuid.NewV7())
		if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name, is_active) VALUES ($1, $2, $3, $4)`,
			f.tenant, f.funds[name], name, name != "Old"); err != nil {
			t.Fatal(err)
		}
	}
	svc := New(pool, Config{Contacts: benchContacts{}, Tenants: fixedTenants("CAD")}, nil)
	f.srv, f.giving = &giftImportServer{s: svc}, &givingServer{s: svc}
	p := authctx.System(f.tenant.String(), importstore.ImportActor(f.importID), scopes.ImportsManage, scopes.ContactsView)
	f.ctx = authctx.NewIncomingContext(ctx, p)
	return f
}

func (f *importFixture) importRows(t testing.TB, dryRun bool, rows ...*ordersv1.GiftImportRow) []*ordersv1.GiftImportResult {
	t.Helper()
	resp, err := f.srv.ImportGifts(f.ctx, &ordersv1.ImportGiftsRequest{TenantId: f.tenant.String(), ImportId: f.importID.String(), DryRun: dryRun, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetResults()) != len(rows) {
		t.Fatalf("%d results for %d rows", len(resp.GetResults()), len(rows))
	}
	return resp.GetResults()
}

func (f *importFixture) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), sql, append([]any{f.tenant}, args...)...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func giftRow(row int64, ext string, contact int64, fund, currency string) *ordersv1.GiftImportRow {
	return &ordersv1.GiftImportRow{Row: row, ExternalId: ext, ContactId: contact, Date: "2024-03-15", AmountMinor: 2500, Currency: currency,
		Fund: fund, PaymentMethod: "Check", CheckNumber: fmt.Sprint(1000 + row), CampaignId: "spring"}
}

// TestImportGifts: funds by name (any case) and the default fund, unknown
// and inactive funds and unknown currencies failed under their column, the
// tenant's default currency, external ids skipped with the order that has
// them (earlier row, earlier batch), a replayed batch answering the same
// order ids and writing nothing, and the gifts recorded as Completed
// orders of the import's batch, dated by the gift's date, without
// per-order audit rows.
func TestImportGifts(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	rows := []*ordersv1.GiftImportRow{
		giftRow(1, "G-1", 5, "building", "usd"),
		giftRow(2, "G-2", 5, "Nope", "USD"),
		giftRow(3, "", 5, "", ""),
		giftRow(4, "G-1", 6, "General", "USD"),
		giftRow(5, "G-5", 5, "Old", "USD"),
		giftRow(6, "G-6", 5, "General", "XYZ"),
		{Row: 7, ContactId: 5, Date: "2024-03-15", AmountMinor: 100, PaymentMethod: "Card"},
	}
	got := f.importRows(t, false, rows...)
	want := []struct{ outcome, column string }{
		{"created", ""}, {"failed", "fund"}, {"created", ""}, {"skipped", ""}, {"failed", "fund"}, {"failed", "currency"}, {"failed", "paymentMethod"},
	}
	for i, w := range want {
		if got[i].GetRow() != int64(i+1) || got[i].GetOutcome() != w.outcome || got[i].GetColumn() != w.column {
			t.Errorf("row %d: %v, want %s %q", i+1, got[i], w.outcome, w.column)
		}
		if (w.outcome == "failed") != (got[i].GetOrderId() == "") {
			t.Errorf("row %d: order id %q with outcome %s", i+1, got[i].GetOrderId(), got[i].GetOutcome())
		}
	}
	if got[3].GetOrderId() != got[0].GetOrderId() {
		t.Errorf("the repeated external id was skipped with order %s, want row 1's %s", got[3].GetOrderId(), got[0].GetOrderId())
	}
	var fund, method, currency, batchName, created string
	var status string
	err := f.pool.QueryRow(context.Background(), `SELECT d.fund_name, p.method, o.currency, b.name, o.status, to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')
		FROM orders.orders o JOIN orders.order_donations d ON d.order_id = o.id JOIN orders.order_payments p ON p.order_id = o.id
		JOIN orders.batches b ON b.id = o.batch_id WHERE o.tenant_id = $1 AND o.id = $2`, f.tenant, got[0].GetOrderId()).
		Scan(&fund, &method, &currency, &batchName, &status, &created)
	if err != nil {
		t.Fatal(err)
	}
	if fund != "Building" || method != "Check" || currency != "USD" || batchName != "Import "+f.importID.String() || status != "Completed" || created != "2024-03-15 12:00" {
		t.Errorf("row 1 recorded as fund %s, method %s, %s, batch %q, %s, at %s", fund, method, currency, batchName, status, created)
	}
	if err := f.pool.QueryRow(context.Background(), `SELECT o.currency, d.fund_name FROM orders.orders o JOIN orders.order_donations d ON d.order_id = o.id
		WHERE o.tenant_id = $1 AND o.id = $2`, f.tenant, got[2].GetOrderId()).Scan(&currency, &fund); err != nil {
		t.Fatal(err)
	}
	if currency != "CAD" || fund != "General" {
		t.Errorf("row 3 (no fund, no currency) recorded in %s to %s, want CAD to General", currency, fund)
	}
	if n := f.count(t, `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_type <> 'Batch'`); n != 0 {
		t.Errorf("%d audit rows besides the batch's, want none", n)
	}

	// The same batch again (a resumed import): the same answers, nothing
	// written twice; a later batch's row with a recorded external id is
	// skipped with its order.
	again := f.importRows(t, false, rows...)
	for i := range got {
		if again[i].GetOutcome() != got[i].GetOutcome() || again[i].GetOrderId() != got[i].GetOrderId() || again[i].GetColumn() != got[i].GetColumn() {
			t.Errorf("replayed row %d: %v, first %v", i+1, again[i], got[i])
		}
	}
	later := f.importRows(t, false, giftRow(8, "G-1", 5, "General", "USD"))
	if later[0].GetOutcome() != "skipped" || later[0].GetOrderId() != got[0].GetOrderId() {
		t.Errorf("a later row with a recorded external id: %v", later[0])
	}
	if n := f.count(t, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1`); n != 2 {
		t.Errorf("%d orders, want 2", n)
	}
	if n := f.count(t, `SELECT count(DISTINCT order_number) FROM orders.orders WHERE tenant_id = $1`); n != 2 {
		t.Errorf("%d distinct order numbers, want 2", n)
	}
}

// TestImportGiftsCountEverywhere: imported gifts appear in the report
// views on their date and in the contact's giving summary, under the
// survivor when their contact was merged.
func TestImportGiftsCountEverywhere(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO orders.contact_redirects (tenant_id, duplicate_id, survivor_id) VALUES ($1, 40, 41)`, f.tenant); err != nil {
		t.Fatal(err)
	}
	f.importRows(t, false, giftRow(1, "A", 41, "General", "USD"), giftRow(2, "B", 40, "Building", "USD"))
	if n := f.count(t, `SELECT count(*) FROM orders.report_donations_v1 WHERE tenant_id = $1 AND gift_date = '2024-03-15' AND contact_id = 41
		AND status = 'Completed' AND net_amount_minor = 2500`); n != 2 {
		t.Errorf("report_donations_v1 shows %d of the gifts on their date under the survivor, want 2", n)
	}
	if n := f.count(t, `SELECT count(*) FROM orders.report_orders_v1 WHERE tenant_id = $1 AND order_date = '2024-03-15' AND donation_net_minor = 2500`); n != 2 {
		t.Errorf("report_orders_v1 shows %d of the gifts, want 2", n)
	}
	sum, err := f.giving.GetContactGivingSummary(f.ctx, &ordersv1.GetContactGivingSummaryRequest{TenantId: f.tenant.String(), ContactId: 41})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.GetTotals()) != 1 || sum.GetTotals()[0].GetGiftCount() != 2 || sum.GetTotals()[0].GetLifetimeTotal().GetValue() != "50.00" {
		t.Errorf("giving summary %v, want 2 gifts, 50.00", sum.GetTotals())
	}
	if d := sum.GetTotals()[0].GetFirstGift().GetDate().AsTime(); !d.Equal(time.Date(2024, 3, 15, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("first gift dated %v", d)
	}
	// A second batch onto the same contacts and months, other months
	// (recent and old), currencies and funds, with a live gift recorded
	// between: the summaries the import adds set-based equal a rebuild.
	live := &givingFixture{pool: f.pool, tenant: f.tenant, batch: uuid.Must(uuid.NewV7()), funds: [2]uuid.UUID{f.funds["General"], f.funds["Building"]}}
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO orders.batches (tenant_id, id, name) VALUES ($1, $2, 'Live')`, f.tenant, live.batch); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(context.Background(), f.pool, func(tx pgx.Tx) error {
		live.number = 1000
		_, err := live.insert(context.Background(), tx, gift{41, "Completed", "USD", time.Date(2024, 3, 20, 0, 0, 0, 0, time.UTC), [2]int64{700, 0}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	recent := time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly)
	rows := []*ordersv1.GiftImportRow{giftRow(1, "C", 41, "General", "USD"), giftRow(2, "D", 42, "Building", "EUR"),
		giftRow(3, "E", 41, "Building", "USD"), giftRow(4, "F", 43, "General", "USD"), giftRow(5, "G", 41, "General", "USD")}
	rows[2].Date, rows[3].Date, rows[4].Date, rows[4].AmountMinor = recent, recent, "2019-11-30", 99
	f.importID = uuid.Must(uuid.NewV7())
	f.importRows(t, false, rows...)
	live.checkAgainstRebuild(t)
}

// TestImportGiftsDryRun: a dry run answers as the import would and
// writes nothing: no order, batch, outcome or order number.
func TestImportGiftsDryRun(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	got := f.importRows(t, true, giftRow(1, "D-1", 5, "General", "USD"), giftRow(2, "D-1", 5, "General", "USD"), giftRow(3, "D-3", 5, "Nope", "USD"))
	if got[0].GetOutcome() != "created" || got[1].GetOutcome() != "skipped" || got[2].GetOutcome() != "failed" {
		t.Errorf("dry run answered %v", got)
	}
	for _, table := range []string{"orders.orders", "orders.batches", "orders.import_rows", "orders.counters", "audit.events"} {
		if n := f.count(t, `SELECT count(*) FROM `+table+` WHERE tenant_id = $1`); n != 0 {
			t.Errorf("the dry run left %d rows in %s", n, table)
		}
	}
	// The real run afterwards records the rows.
	if real := f.importRows(t, false, giftRow(1, "D-1", 5, "General", "USD")); real[0].GetOutcome() != "created" {
		t.Errorf("the run after the dry run answered %v", real[0])
	}
}

// TestImportGiftsRefusals: the scope, the import id and repeated row
// numbers.
func TestImportGiftsRefusals(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	noScope := authctx.NewIncomingContext(context.Background(), authctx.System(f.tenant.String(), "import:x", scopes.OrdersCreate))
	for _, c := range []struct {
		name string
		ctx  context.Context
		req  *ordersv1.ImportGiftsRequest
		code codes.Code
	}{
		{"no scope", noScope, &ordersv1.ImportGiftsRequest{TenantId: f.tenant.String(), ImportId: f.importID.String()}, codes.PermissionDenied},
		{"bad import id", f.ctx, &ordersv1.ImportGiftsRequest{TenantId: f.tenant.String(), ImportId: "x"}, codes.InvalidArgument},
		{"row twice", f.ctx, &ordersv1.ImportGiftsRequest{TenantId: f.tenant.String(), ImportId: f.importID.String(),
			Rows: []*ordersv1.GiftImportRow{giftRow(1, "", 5, "", "USD"), giftRow(1, "", 5, "", "USD")}}, codes.InvalidArgument},
	} {
		_, err := f.srv.ImportGifts(c.ctx, c.req)
		if got := apperr.ToStatus(err).Code(); got != c.code {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.code)
		}
	}
}

// TestCheckGiftRow: each value refused under its column, the first one
// wrong; today is 2026-03-10.
func TestCheckGiftRow(t *testing.T) {
	t.Parallel()
	ok := func() *ordersv1.GiftImportRow {
		return &ordersv1.GiftImportRow{Row: 1, ContactId: 1, Date: "2024-01-31", AmountMinor: 100, Currency: "USD", PaymentMethod: "cash"}
	}
	long := string(make([]byte, 201))
	for _, c := range []struct {
		name   string
		change func(*ordersv1.GiftImportRow)
		column string
	}{
		{"valid", func(*ordersv1.GiftImportRow) {}, ""},
		{"default currency", func(r *ordersv1.GiftImportRow) { r.Currency = "" }, ""},
		{"no contact", func(r *ordersv1.GiftImportRow) { r.ContactId = 0 }, "contactId"},
		{"bad date", func(r *ordersv1.GiftImportRow) { r.Date = "2024-02-30" }, "date"},
		{"unknown currency", func(r *ordersv1.GiftImportRow) { r.Currency = "ABC" }, "currency"},
		{"zero amount", func(r *ordersv1.GiftImportRow) { r.AmountMinor = 0 }, "amount"},
		{"huge amount", func(r *ordersv1.GiftImportRow) { r.AmountMinor = 1 << 62 }, "amount"},
		{"long campaign", func(r *ordersv1.GiftImportRow) { r.CampaignId = long }, "campaignId"},
		{"card", func(r *ordersv1.GiftImportRow) { r.PaymentMethod = "Card" }, "paymentMethod"},
		{"no method", func(r *ordersv1.GiftImportRow) { r.PaymentMethod = "" }, "paymentMethod"},
		{"long check number", func(r *ordersv1.GiftImportRow) { r.CheckNumber = long[:51] }, "checkNumber"},
		{"long external id", func(r *ordersv1.GiftImportRow) { r.ExternalId = long }, "externalId"},
		{"year 9999", func(r *ordersv1.GiftImportRow) { r.Date = "9999-12-31" }, "date"},
		{"year 1", func(r *ordersv1.GiftImportRow) { r.Date = "0001-01-01" }, "date"},
		{"the day after tomorrow", func(r *ordersv1.GiftImportRow) { r.Date = "2026-03-12" }, "date"},
		{"tomorrow", func(r *ordersv1.GiftImportRow) { r.Date = "2026-03-11" }, ""},
	} {
		r := ok()
		c.change(r)
		g := checkGiftRow(r, "EUR", time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC))
		if g.FailColumn != c.column {
			t.Errorf("%s: refused under %q (%s), want %q", c.name, g.FailColumn, g.FailMessage, c.column)
		}
		if c.name == "default currency" && g.Currency != "EUR" {
			t.Errorf("no currency became %q, want the default EUR", g.Currency)
		}
	}
}

// TestImportGiftsSameBatchTwiceAtOnce: two replicas sending the same batch
// at once (a lease that expired under a slow one) record each row once:
// the second either answers the first's outcomes or fails and leaves
// nothing, and a retry answers the first's order ids.
func TestImportGiftsSameBatchTwiceAtOnce(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	rows := []*ordersv1.GiftImportRow{giftRow(1, "", 5, "", "USD"), giftRow(2, "X-2", 6, "Building", "USD"), giftRow(3, "", 7, "General", "USD")}
	req := &ordersv1.ImportGiftsRequest{TenantId: f.tenant.String(), ImportId: f.importID.String(), Rows: rows}
	type answer struct {
		resp *ordersv1.ImportGiftsResponse
		err  error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			resp, err := f.srv.ImportGifts(f.ctx, req)
			answers <- answer{resp, err}
		}()
	}
	var ok []*ordersv1.ImportGiftsResponse
	for range 2 {
		if a := <-answers; a.err == nil {
			ok = append(ok, a.resp)
		}
	}
	if len(ok) == 0 {
		t.Fatal("both calls failed")
	}
	retry := f.importRows(t, false, rows...)
	for _, resp := range ok {
		for i, r := range resp.GetResults() {
			if r.GetOutcome() != "created" || r.GetOrderId() != retry[i].GetOrderId() {
				t.Errorf("row %d answered %v, the retry %v", i+1, r, retry[i])
			}
		}
	}
	if n := f.count(t, `SELECT count(*) FROM orders.orders WHERE tenant_id = $1`); n != 3 {
		t.Errorf("%d orders, want 3", n)
	}
}

// TestImportGiftsReplayOfRefusedRows: a batch of rows all refused before
// the store looked at them answers the same when sent again.
func TestImportGiftsReplayOfRefusedRows(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	bad := &ordersv1.GiftImportRow{Row: 1, ContactId: 5, Date: "not a date", AmountMinor: 100, Currency: "USD", PaymentMethod: "Cash"}
	for range 2 {
		got := f.importRows(t, false, bad)
		if got[0].GetOutcome() != "failed" || got[0].GetColumn() != "date" {
			t.Errorf("answered %v, want failed under date", got[0])
		}
	}
}
