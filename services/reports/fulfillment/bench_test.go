package fulfillment

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	contactsmig "github.com/almoner/almoner/services/contacts/migrations"
	inventorymig "github.com/almoner/almoner/services/inventory/migrations"
	ordersmig "github.com/almoner/almoner/services/orders/migrations"
	"github.com/almoner/almoner/services/reports/branding"
	"github.com/almoner/almoner/services/reports/migrations"
	"github.com/almoner/almoner/services/reports/store"
)

// seed makes n pending shipments of three lines each for a new tenant,
// server-side, as the inventory service writes them, and returns the
// server and the tenant.
func seed(tb testing.TB, n int) (*Server, uuid.UUID) {
	tb.Helper()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(tb, audit.Migrations(), contactsmig.Set(), inventorymig.Set(), ordersmig.Set(), migrations.Set()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	tenant := uuid.New()
	for _, q := range []string{
		`INSERT INTO inventory.items (tenant_id, id, sku, name, price_minor, currency, fair_market_value_minor, location)
		 SELECT $1, gen_random_uuid(), 'SKU-' || i, 'Premium number ' || i, 2500, 'USD', 1000, 'BIN-' || i FROM generate_series(1, 3) i`,
		`WITH g AS (SELECT i, gen_random_uuid() AS id FROM generate_series(1, $2::int) i)
		 INSERT INTO inventory.shipments (tenant_id, id, order_id, order_number, order_date, contact_id, status, shipping_address)
		 SELECT $1, id, id, i, now(), i, 'pending',
		        jsonb_build_object('line1', i || ' Main St', 'city', 'Springfield', 'postalCode', '02134', 'country', 'US')
		 FROM g`,
		`INSERT INTO inventory.shipment_lines (tenant_id, shipment_id, line_number, item_id, sku, name, quantity, stock_moved)
		 SELECT $1, s.id, row_number() OVER (PARTITION BY s.id ORDER BY it.sku), it.id, it.sku, it.name, 1 + s.order_number % 3, true
		 FROM inventory.shipments s CROSS JOIN inventory.items it WHERE s.tenant_id = $1 AND it.tenant_id = $1`,
	} {
		args := []any{tenant}
		if strings.Contains(q, "$2") {
			args = append(args, n)
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			tb.Fatal(err)
		}
	}
	st := store.New(pool)
	profile := func(ctx context.Context, tenant uuid.UUID) (store.Profile, error) {
		p, err := st.Profile(ctx, tenant)
		if errors.Is(err, db.ErrNotFound) {
			return store.Profile{TenantID: tenant, TimeZone: "UTC"}, nil
		}
		return p, err
	}
	return New(st, branding.NewStore(pool), profile), tenant
}

// TestSlipsInOrderNumberOrder renders a few slips and checks what each
// page is made of: no price, order number order.
func TestSlipsInOrderNumberOrder(t *testing.T) {
	s, tenant := seed(t, 5)
	shs, err := s.store.Shipments(context.Background(), tenant, store.ShipmentSelection{Status: "pending"}, maxSlips)
	if err != nil || len(shs) != 5 {
		t.Fatalf("shipments = %d, %v", len(shs), err)
	}
	for i, sh := range shs {
		if sh.OrderNumber != int64(i+1) || len(sh.Lines) != 3 {
			t.Errorf("shipment %d: order %d, %d lines", i, sh.OrderNumber, len(sh.Lines))
		}
		d := slip(store.Profile{LegalName: "Library Friends", Country: "US"}, sh)
		if d.PageSize != "Letter" || d.Facts[0][1] != strconv.FormatInt(sh.OrderNumber, 10) || len(d.Totals) != 0 || len(d.Columns) != 3 {
			t.Errorf("slip %d = %+v", i, d)
		}
	}
	var buf bytes.Buffer
	if err := s.renderSlips(context.Background(), tenant, shs, &buf); err != nil || !bytes.HasPrefix(buf.Bytes(), []byte("%PDF")) {
		t.Fatalf("render: %v", err)
	}
}

// BenchmarkPackingSlips reads and renders the packing slips of
// ALMONER_SLIPS_BENCH (2,000) shipments into one PDF, as
// POST …/shipments/packing-slips does (issue 33's target: under 10 s and
// 128 MB; scripts/bench-fulfillment.sh measures the peak RSS).
func BenchmarkPackingSlips(b *testing.B) {
	n := maxSlips
	if v, err := strconv.Atoi(os.Getenv("ALMONER_SLIPS_BENCH")); err == nil && v > 0 {
		n = v
	}
	s, tenant := seed(b, n)
	ctx := context.Background()
	var size int
	for b.Loop() {
		shs, err := s.store.Shipments(ctx, tenant, store.ShipmentSelection{Status: "pending"}, maxSlips)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := s.renderSlips(ctx, tenant, shs, &buf); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "pdf-MB")
}
