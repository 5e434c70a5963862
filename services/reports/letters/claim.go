package letters

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/service"
)

// GRPCClaimer is Claimer over the orders service's
// AcknowledgementClaimService, as the platform's own work for the tenant
// (authctx.System, actor letter-run): the orders audit rows name it.
type GRPCClaimer struct {
	// Orders is the connection to the orders service.
	Orders *service.Upstream
}

// Claim asks orders to acknowledge ids for run.
func (g GRPCClaimer) Claim(ctx context.Context, tenant, run uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	conn, err := g.Orders.Conn()
	if err != nil {
		return nil, err
	}
	req := &ordersv1.ClaimAcknowledgementsRequest{TenantId: tenant.String(), RunId: run.String(), OrderIds: make([]string, len(ids))}
	for i, id := range ids {
		req.OrderIds[i] = id.String()
	}
	p := authctx.System(tenant.String(), "letter-run", scopes.DocumentsManage)
	resp, err := ordersv1.NewAcknowledgementClaimServiceClient(conn).ClaimAcknowledgements(authctx.NewOutgoingContext(ctx, p), req)
	if err != nil {
		return nil, fmt.Errorf("letters: claim %d gifts of run %s: %w", len(ids), run, err)
	}
	out := make([]uuid.UUID, 0, len(resp.GetOrderIds()))
	for _, s := range resp.GetOrderIds() {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("letters: claim answered %q", s)
		}
		out = append(out, id)
	}
	return out, nil
}
