package orders

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/orders/store/changestore"
)

// TestRefundStoresLineShares refunds an order of two donations and an item
// twice and checks the per-line shares the report views read, computed by
// hand with the cumulative-floor rule (T = 1000 + 2000 + 3001 = 6001):
// after 10.00, floor(1000·1000/T) = 166, floor(1000·3000/T) − 166 = 333,
// 1000 − 499 = 501; after 30.00 in all, 499, 1499 − 499 = 1000 and
// 3000 − 1499 = 1501.
func TestRefundStoresLineShares(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	tenant, fund, batch, order := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []string{
		`INSERT INTO orders.funds (tenant_id, id, name) SELECT $1, $2, 'General' WHERE $3::uuid IS NOT NULL AND $4::uuid IS NOT NULL`,
		`INSERT INTO orders.batches (tenant_id, id, name) SELECT $1, $3, 'b' WHERE $2::uuid IS NOT NULL AND $4::uuid IS NOT NULL`,
		`INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor,
			deductible_minor, has_donations, has_items, batch_id) SELECT $1, $4, 1, 7, 'Completed', 'USD', 3000, 3001, 6001, 3000, true, true, $3 WHERE $2::uuid IS NOT NULL`,
		`INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
			SELECT $1, $4, gen_random_uuid(), p, $2, 'General', a, true FROM (VALUES (0, 1000), (1, 2000)) v(p, a) WHERE $3::uuid IS NOT NULL`,
		`INSERT INTO orders.order_items (tenant_id, order_id, line_number, item_id, sku, name, quantity, unit_price_minor, fair_market_value_minor)
			SELECT $1, $4, 1, gen_random_uuid(), 'TOTE', 'Tote', 1, 3001, 1000 WHERE $2::uuid IS NOT NULL AND $3::uuid IS NOT NULL`,
		`INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status)
			SELECT $1, $4, gen_random_uuid(), 0, 'Cash', 6001, 'Captured' WHERE $2::uuid IS NOT NULL AND $3::uuid IS NOT NULL`,
	} {
		if _, err := pool.Exec(ctx, q, tenant, fund, batch, order); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	svc := New(pool, Config{}, nil)
	for _, step := range []struct {
		refund                 int64
		d0, d1, item, donation int64
	}{
		{refund: 1000, d0: 166, d1: 333, item: 501, donation: 499},
		{refund: 2000, d0: 499, d1: 1000, item: 1501, donation: 1499},
	} {
		if _, err := svc.changes.Refund(ctx, tenant, order, changestore.Refund{AmountMinor: step.refund}, "test"); err != nil {
			t.Fatal(err)
		}
		var d0, d1, item, donation int64
		if err := pool.QueryRow(ctx, `SELECT
				(SELECT refunded_minor FROM orders.order_donations WHERE tenant_id = $1 AND order_id = $2 AND position = 0),
				(SELECT refunded_minor FROM orders.order_donations WHERE tenant_id = $1 AND order_id = $2 AND position = 1),
				(SELECT refunded_minor FROM orders.order_items WHERE tenant_id = $1 AND order_id = $2),
				(SELECT donation_refunded_minor FROM orders.orders WHERE tenant_id = $1 AND id = $2)`, tenant, order).Scan(&d0, &d1, &item, &donation); err != nil {
			t.Fatal(err)
		}
		if d0 != step.d0 || d1 != step.d1 || item != step.item || donation != step.donation {
			t.Errorf("after refunding %d: shares %d, %d, item %d, donations %d; want %d, %d, %d, %d",
				step.refund, d0, d1, item, donation, step.d0, step.d1, step.item, step.donation)
		}
		// The views read the stored shares: net = amount − share.
		var net, donationNet int64
		if err := pool.QueryRow(ctx, `SELECT (SELECT sum(net_amount_minor) FROM orders.report_donations_v1 WHERE tenant_id = $1 AND order_id = $2),
				(SELECT donation_net_minor FROM orders.report_orders_v1 WHERE tenant_id = $1 AND order_id = $2)`, tenant, order).Scan(&net, &donationNet); err != nil {
			t.Fatal(err)
		}
		if net != 3000-step.donation || donationNet != net {
			t.Errorf("views: donation net %d, order's donation net %d; want %d", net, donationNet, 3000-step.donation)
		}
	}
}
