package orders

import (
	"context"
	"testing"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/paging"
)

// TestListTokenCarriesTotal: a listing is counted on its first page and
// the count travels in the token, so pages reached by token report the
// listing's total even when orders were added since, and serve the next
// orders of the listing; a token without a total counts again.
func TestListTokenCarriesTotal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testPool(t)
	tenant, fund := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `INSERT INTO orders.funds (tenant_id, id, name) VALUES ($1, $2, 'General')`, tenant, fund); err != nil {
		t.Fatal(err)
	}
	srv := &orderServer{s: New(pool, Config{Contacts: benchContacts{}}, nil)}
	p := authctx.Principal{TenantID: tenant.String(), KeyID: "k", KeyPrefix: "ak_test_list", Scopes: []string{"orders:create", "orders:view"}, Currency: "USD"}
	pctx := authctx.NewIncomingContext(ctx, p)
	create := func(n int) {
		for range n {
			_, err := srv.CreateOrder(pctx, &ordersv1.CreateOrderRequest{TenantId: tenant.String(), ContactId: 1,
				Donations: []*ordersv1.DonationInput{{FundId: fund.String(), Amount: &typev1.Decimal{Value: "10.00"}}},
				Payments:  []*ordersv1.PaymentInput{{PaymentMethod: "Cash", Amount: &typev1.Decimal{Value: "10.00"}}}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	size := int32(2)
	list := func(token string) *ordersv1.ListOrdersResponse {
		t.Helper()
		resp, err := srv.ListOrders(pctx, &ordersv1.ListOrdersRequest{TenantId: tenant.String(), PageSize: &size, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	create(5)
	all := list("")
	size = 5
	everything := list("")
	size = 2
	create(2) // newer than the listing: not in its later pages
	second := list(all.GetNextPageToken())
	tests := []struct {
		name      string
		got       *ordersv1.ListOrdersResponse
		total     int64
		page      int32
		firstID   string
		wantToken bool
	}{
		{"first page", all, 5, 1, everything.GetItems()[0].GetId(), true},
		{"page 2 by token, orders added since", second, 5, 2, everything.GetItems()[2].GetId(), true},
		{"page 3 by token", list(second.GetNextPageToken()), 5, 3, everything.GetItems()[4].GetId(), false},
	}
	for _, tc := range tests {
		if tc.got.GetTotalCount() != tc.total || tc.got.GetPage() != tc.page || tc.got.GetItems()[0].GetId() != tc.firstID ||
			(tc.got.GetNextPageToken() != "") != tc.wantToken {
			t.Errorf("%s: total %d, page %d, first %s, next token %q; want %d, %d, %s, token %v", tc.name, tc.got.GetTotalCount(),
				tc.got.GetPage(), tc.got.GetItems()[0].GetId(), tc.got.GetNextPageToken(), tc.total, tc.page, tc.firstID, tc.wantToken)
		}
	}
	// A token made before totals were carried has none: the page counts.
	var c listCursor
	raw, err := paging.Parse(nil, &size, all.GetNextPageToken(), paging.Standard)
	if err != nil {
		t.Fatal(err)
	}
	if err := paging.DecodeToken(raw.Token, &c); err != nil {
		t.Fatal(err)
	}
	c.Total = 0
	if got := list(paging.EncodeToken(c)); got.GetTotalCount() != 7 || got.GetItems()[0].GetId() != everything.GetItems()[2].GetId() {
		t.Errorf("token without a total: total %d, first %s; want 7, %s", got.GetTotalCount(), got.GetItems()[0].GetId(), everything.GetItems()[2].GetId())
	}
}
