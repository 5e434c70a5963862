package orders

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
)

func principalCtx(tenant string, scopes ...string) context.Context {
	p := authctx.Principal{TenantID: tenant, KeyID: "k", KeyPrefix: "ak_test_x", Scopes: scopes}
	return metadata.NewIncomingContext(context.Background(), p.MD())
}

func TestGivingSummaryStub(t *testing.T) {
	t.Parallel()
	const tenant = "0190a4d6-0000-7000-8000-000000000001"
	s := givingServer{}
	for _, sc := range []string{"contacts:view", "donations:view"} {
		resp, err := s.GetContactGivingSummary(principalCtx(tenant, sc), &ordersv1.GetContactGivingSummaryRequest{TenantId: tenant, ContactId: 7})
		if err != nil {
			t.Fatalf("%s: %v", sc, err)
		}
		if len(resp.GetTotals())+len(resp.GetRecentOrders())+len(resp.GetActiveSchedules()) != 0 {
			t.Errorf("the stub invented figures: %v", resp)
		}
	}
	cases := []struct {
		ctx  context.Context
		req  *ordersv1.GetContactGivingSummaryRequest
		want codes.Code
	}{
		{context.Background(), &ordersv1.GetContactGivingSummaryRequest{TenantId: tenant, ContactId: 7}, codes.Unauthenticated},
		{principalCtx(tenant, "orders:create"), &ordersv1.GetContactGivingSummaryRequest{TenantId: tenant, ContactId: 7}, codes.PermissionDenied},
		{principalCtx(tenant, "contacts:view"), &ordersv1.GetContactGivingSummaryRequest{TenantId: "0190a4d6-0000-7000-8000-000000000002", ContactId: 7}, codes.NotFound},
		{principalCtx(tenant, "contacts:view"), &ordersv1.GetContactGivingSummaryRequest{TenantId: tenant}, codes.InvalidArgument},
	}
	for i, c := range cases {
		_, err := s.GetContactGivingSummary(c.ctx, c.req)
		if got := apperr.ToStatus(err).Code(); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}
