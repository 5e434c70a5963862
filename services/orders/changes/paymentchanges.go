package changes

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/changestore"
	"github.com/almoner/almoner/services/orders/tenantproc"
	"github.com/almoner/almoner/services/orders/wire"
)

// errChangeInProgress answers a refund or void of an order while another
// one's processor calls are in flight.
var errChangeInProgress = apperr.Conflict(wire.CodeChangeInProgress, "A refund or void of this order is being made; retry in a moment.")

// Refund gives back r of an order in three steps, with no transaction
// open while the processor is called: claim (the amounts reserved),
// the processor's refunds, record.
func (s *Server) Refund(ctx context.Context, tenantID, orderID uuid.UUID, r changestore.Refund, actor string) (store.Order, error) {
	c, err := s.store.BeginChange(ctx, tenantID, orderID, changestore.ChangeRefund, r.Reason, s.lease, actor, refundPlan(r))
	if err != nil {
		return store.Order{}, err
	}
	return s.changePayments(ctx, c)
}

// void voids an order in the same three steps.
func (s *Server) void(ctx context.Context, tenantID, orderID uuid.UUID, actor string) (store.Order, error) {
	c, err := s.store.BeginChange(ctx, tenantID, orderID, changestore.ChangeVoid, "", s.lease, actor, voidPlan)
	if err != nil {
		return store.Order{}, err
	}
	return s.changePayments(ctx, c)
}

// changePayments makes a claimed change's processor calls in order and
// records what was done. A refusal records the calls made before it and
// answers the refusal; a call whose outcome is unknown keeps the claim,
// its lease ended, for the sweeper to finish with the same keys (the
// processor replays what it did), and answers 503.
func (s *Server) changePayments(ctx context.Context, c changestore.PaymentChange) (store.Order, error) {
	done, callErr := s.callTakes(ctx, c)
	if callErr != nil && processor.IsUnavailable(callErr) {
		if err := s.store.ExpireChange(context.WithoutCancel(ctx), c); err != nil {
			s.logger.ErrorContext(ctx, "expire payment change", "change_id", c.ID, "error", err)
		}
		return store.Order{}, apperr.Unavailable("The payment processor did not answer; the "+c.Kind+
			" is kept and will be completed when it does. Do not send it again.", callErr)
	}
	o, err := s.store.FinishChange(ctx, c, done)
	if err != nil {
		return store.Order{}, err
	}
	var known *apperr.Error
	switch {
	case errors.As(callErr, &known):
		return store.Order{}, callErr // the processor no longer connected, say
	case callErr != nil:
		return store.Order{}, ProcessorError(callErr, "the request was not accepted.", "The payment processor failed; nothing more was changed.")
	}
	return o, nil
}

// callTakes makes each take's processor call, stopping at the first
// failure, and reports how many were made.
func (s *Server) callTakes(ctx context.Context, c changestore.PaymentChange) (int, error) {
	for i, t := range c.Takes {
		if err := s.callTake(ctx, c.TenantID.String(), c.Payments[t.PaymentID], t); err != nil {
			return i, err
		}
	}
	return len(c.Takes), nil
}

// callTake refunds or cancels one payment at the processor that collected
// it; a payment no processor collected needs no call.
func (s *Server) callTake(ctx context.Context, tenantID string, pay store.Payment, t changestore.PaymentTake) error {
	if pay.Processor == "" || pay.ProcessorReference == "" {
		return nil
	}
	proc, err := tenantproc.ByName(ctx, s.processors, tenantID, pay.Processor)
	if err != nil {
		return err
	}
	if t.Cancel {
		return proc.Cancel(ctx, pay.ProcessorReference, t.Key)
	}
	_, err = proc.Refund(ctx, processor.RefundRequest{IdempotencyKey: t.Key, Reference: pay.ProcessorReference, AmountMinor: t.Amount,
		Metadata: map[string]string{"tenant_id": tenantID, "payment_id": pay.ID.String()}})
	return err
}

// Finish finishes the refunds and voids whose process died or lost
// the processor's answer: their calls are made again with the same keys
// (the processor replays what it did) and what was done is recorded; an
// order that ends Voided or Refunded gives its stock back. Each is taken
// under lease; one that fails again waits for the lease.
func (s *Server) Finish(ctx context.Context, lease time.Duration) (finished int, err error) {
	seen := map[uuid.UUID]bool{}
	for ctx.Err() == nil {
		c, ok, err := s.store.TakeStaleChange(ctx, lease)
		if err != nil || !ok || seen[c.ID] {
			return finished, err
		}
		seen[c.ID] = true
		o, err := s.changePayments(ctx, c)
		if err != nil {
			s.logger.ErrorContext(ctx, "finish payment change: left for a later sweep", "tenant_id", c.TenantID, "order_id", c.OrderID,
				"change_id", c.ID, "kind", c.Kind, "error", err)
			continue
		}
		finished++
		if (o.Status == store.StatusVoided || o.Status == store.StatusRefunded) && len(o.Items) > 0 {
			p := authctx.System(c.TenantID.String(), "system", scopes.OrdersVoid)
			if err := s.releaseAll(ctx, p, o.ID); err != nil {
				s.logger.ErrorContext(ctx, "release stock of a finished payment change", "order_id", o.ID, "error", err)
			}
		}
	}
	return finished, ctx.Err()
}

// ProcessorError maps a processor failure of a change made after the fact (a
// refund, a void, a detach): a refusal is a 400 under "" with the
// processor's reason (else fallback), anything else a sanitized 503 that
// says what did not happen.
func ProcessorError(err error, fallback, unavailable string) error {
	if r, ok := processor.AsRefused(err); ok {
		return apperr.Rule(wire.CodeProcessorRefused, "The payment processor refused: "+wire.FirstNonEmpty(r.Message, fallback))
	}
	return apperr.Unavailable(unavailable, err)
}
