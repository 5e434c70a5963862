package procevents

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/eventstore"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// Server receives processor notifications
// (POST /api/webhooks/stripe/{tenantSlug}, public) and applies them.
type Server struct {
	ordersv1.UnimplementedProcessorNotificationServiceServer
	store      *eventstore.Store
	processors tenantproc.Source
	stock      peers.Stock
	now        func() time.Time
	logger     *slog.Logger
	// settings and recurring: a failed installment is counted on the
	// tenant's retry days, copied from the auth service first.
	settings  peers.Settings
	recurring *recurringstore.Store
}

// New returns the notifications' server: events are verified with the
// secrets processors knows, applied to st, and an order that stops
// standing gives its stock back to stock.
func New(st *store.Store, processors tenantproc.Source, stock peers.Stock, now func() time.Time, logger *slog.Logger) *Server {
	return &Server{store: eventstore.New(st), processors: processors, stock: stock, now: now, logger: logger, recurring: recurringstore.New(st)}
}

// UseSettings makes the auth service's tenant settings the source of the
// retry days a failed installment is counted on (nil: orders' copy).
func (n *Server) UseSettings(settings peers.Settings) { n.settings = settings }

// Actor is the actor of changes a processor's notification makes.
const Actor = "processor:stripe"

// errBadNotification is the one answer to a notification that cannot be
// trusted: a missing or wrong signature, a stale timestamp and an unknown
// slug look the same, so the URL tells a prober nothing.
var errBadNotification = apperr.Rule("Processor.InvalidNotification", "The notification could not be verified.")

// ReceiveStripeEvent verifies a Stripe event with the tenant's webhook
// secret and applies it once. It makes no call to Stripe: everything it
// needs is in the signed event.
func (n *Server) ReceiveStripeEvent(ctx context.Context, req *ordersv1.ReceiveStripeEventRequest) (*ordersv1.ReceiveStripeEventResponse, error) {
	target, ok, err := n.processors.ForNotification(ctx, tenantproc.ProviderStripe, req.GetTenantSlug())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errBadNotification
	}
	ev, err := stripeproc.ParseEvent(req.GetPayload(), req.GetSignature(), target.WebhookSecret)
	switch {
	case errors.Is(err, processor.ErrBadSignature):
		n.refused(ctx, target.TenantID, eventstore.RefusedBadSignature)
		return nil, errBadNotification
	case err != nil:
		// Signed by the tenant's account but without what its type needs:
		// answered 2xx, because Stripe would otherwise send it again for
		// days, and logged for the operator.
		n.logger.WarnContext(ctx, "processor event cannot be applied", "tenant_id", target.TenantID, "error", err)
		n.refused(ctx, target.TenantID, eventstore.RefusedUnappliable)
		return &ordersv1.ReceiveStripeEventResponse{Received: true}, nil
	}
	if err := n.Apply(ctx, target.TenantID, ev); err != nil {
		if errors.Is(err, store.ErrChangeInProgress) {
			n.refused(ctx, target.TenantID, eventstore.RefusedChangeInProgress)
		}
		return nil, err
	}
	return &ordersv1.ReceiveStripeEventResponse{Received: true}, nil
}

// refused counts a refused notification for the operations log
// (docs/operators.md). A failure to count is logged, never the answer:
// the processor is told what it would have been told.
func (n *Server) refused(ctx context.Context, tenantID, reason string) {
	tid, err := uuid.Parse(tenantID)
	if err == nil {
		err = n.store.RecordRefusal(ctx, tid, tenantproc.ProviderStripe, reason, n.now())
	}
	if err != nil {
		n.logger.ErrorContext(ctx, "count a refused processor notification", "tenant_id", tenantID, "reason", reason, "error", err)
	}
}

// settlements maps what an event means to what it does to a payment.
var settlements = map[processor.EventKind]eventstore.Settlement{
	processor.EventPaymentSucceeded: eventstore.SettleSucceeded,
	processor.EventPaymentFailed:    eventstore.SettleFailed,
	processor.EventPaymentCanceled:  eventstore.SettleFailed,
	processor.EventChargeRefunded:   eventstore.SettleRefunded,
	processor.EventDisputeCreated:   eventstore.SettleDisputed,
}

// Apply records the event's effect, then gives back the stock of an
// order that stopped standing. The stock release is the inventory
// service's (idempotent by order), after the commit; when it fails the
// order's stock stays reserved and the log says so, as for a void.
func (s *Server) Apply(ctx context.Context, tenantID string, ev processor.Event) error {
	settle, ok := settlements[ev.Kind]
	if !ok {
		s.logger.DebugContext(ctx, "processor event ignored", "event_id", ev.ID, "event_type", ev.Type)
		return nil
	}
	tid, err := uuid.Parse(tenantID)
	if err != nil {
		return err
	}
	if settle == eventstore.SettleFailed {
		// A failed installment counts the retry days, read now: the
		// notification is applied in a transaction, which may make no call.
		peers.SyncRetryDays(ctx, s.settings, s.recurring.SetRetryDays, tid, s.logger)
	}
	applied, err := s.store.ApplyNotification(ctx, tid, eventstore.Notification{Provider: tenantproc.ProviderStripe, EventID: ev.ID, EventType: ev.Type,
		Reference: ev.Reference, Settle: settle, RefundedMinor: ev.AmountRefundedMinor, Reason: ev.FailureCode,
		On: s.now()}, Actor)
	if err != nil {
		return err
	}
	switch {
	case applied.Duplicate:
		s.logger.InfoContext(ctx, "processor event already applied", "event_id", ev.ID, "event_type", ev.Type)
	case applied.Unknown:
		s.logger.WarnContext(ctx, "processor event for an unknown charge", "tenant_id", tenantID, "event_id", ev.ID,
			"event_type", ev.Type, "processor_reference", ev.Reference)
	case applied.ReleaseStock:
		p := authctx.System(tenantID, Actor, scopes.OrdersVoid)
		if err := s.stock.Release(ctx, p, &inventoryv1.ReleaseStockRequest{TenantId: tenantID, OrderId: applied.Order.ID.String()}); err != nil {
			s.logger.ErrorContext(ctx, "release stock of an order the processor failed or refunded", "order_id", applied.Order.ID, "error", err)
		}
	}
	return nil
}
