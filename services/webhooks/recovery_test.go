package webhooks

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
)

// TestRecoveryBacklogCap: replay and redelivery share a cap across calls
// (maxRecoveryPending, lowered to 10 here): a tenant's pending replayed
// and redelivered deliveries never pass it, a call that would pass it is a
// 409 Webhook.RecoveryBacklog that queues nothing, and once the backlog is
// sent there is room again. (Two at once: the store's
// TestRecoveryBacklogWaitsForConcurrentReplay.)
func TestRecoveryBacklogCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	h.s.recoveryLimit = 10
	ep := h.endpoint(t, "contact.created")
	since := time.Now().Add(-time.Minute)
	h.write(t, "c", 6)
	a := &server{s: h.s}
	ctx := authctx.NewIncomingContext(context.Background(), authctx.Principal{
		TenantID: h.tenant.String(), KeyID: "test", Scopes: []string{scopes.WebhooksManage}, Features: []string{featureWebhooks}})
	replay := func() (*webhooksv1.ReplayWebhookEventsResponse, error) {
		return a.ReplayWebhookEvents(ctx, &webhooksv1.ReplayWebhookEventsRequest{
			TenantId: h.tenant.String(), WebhookId: ep.String(), Since: timestamppb.New(since)})
	}
	r, err := replay()
	if err != nil || r.GetEnqueued() != 6 {
		t.Fatalf("first replay = %v, %v; want 6", r, err)
	}
	// 6 pending: another 6 would make 12.
	if _, err := replay(); !isBacklog(err) {
		t.Fatalf("second replay: %v, want 409 %s", err, codeRecoveryBacklog)
	}
	if n := h.queued(t, ep); n != 6 {
		t.Fatalf("%d queued after the refused replay, want 6", n)
	}
	// Redeliveries count too: four more fit, the fifth does not.
	var one string
	if err := h.pool.QueryRow(context.Background(), `SELECT id::text FROM webhooks.deliveries WHERE tenant_id = $1 LIMIT 1`, h.tenant).Scan(&one); err != nil {
		t.Fatal(err)
	}
	redeliver := func() error {
		_, err := a.RedeliverWebhookDelivery(ctx, &webhooksv1.RedeliverWebhookDeliveryRequest{
			TenantId: h.tenant.String(), WebhookId: ep.String(), DeliveryId: one})
		return err
	}
	for i := 0; i < 4; i++ {
		if err := redeliver(); err != nil {
			t.Fatalf("redelivery %d: %v", i+1, err)
		}
	}
	if err := redeliver(); !isBacklog(err) {
		t.Fatalf("redelivery past the cap: %v, want 409 %s", err, codeRecoveryBacklog)
	}
	// Sent: room again.
	h.d.dispatch(context.Background())
	h.settle(t, 10)
	if r, err := replay(); err != nil || r.GetEnqueued() != 6 {
		t.Fatalf("replay once the backlog is sent = %v, %v; want 6", r, err)
	}
}

// isBacklog reports the 409 of the recovery cap.
func isBacklog(err error) bool {
	e, ok := apperr.As(err)
	return ok && e.Kind == apperr.KindConflict && e.Code == codeRecoveryBacklog
}
