package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/events"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/webhooks/store"
)

var errDeliveryNotFound = apperr.NotFound("Delivery")

// maxReplay is the most events one replay queues: a larger window is
// refused with its count, so a client asks for shorter ones rather than
// queueing an unbounded backlog in one call.
const maxReplay = 10_000

// maxRecoveryPending is the most replayed and redelivered deliveries a
// tenant may have pending at once, across calls and endpoints: with
// maxReplay per call alone, calls in a row (or at once) could each queue
// 10,000, and every pending delivery takes a sending slot of the one
// dispatcher all tenants share. A tenant at the cap waits until its
// backlog is sent or abandoned.
const maxRecoveryPending = 10_000

// codeRecoveryBacklog is the typed code of the 409 for a replay or
// redelivery past maxRecoveryPending.
const codeRecoveryBacklog = "Webhook.RecoveryBacklog"

// backlogError turns the store's refusal into the 409; other errors pass.
func backlogError(err error) error {
	var b *store.BacklogError
	if !errors.As(err, &b) {
		return err
	}
	return apperr.Conflict(codeRecoveryBacklog, fmt.Sprintf(
		"The tenant has %d replayed or redelivered deliveries still pending; %d more would pass the %d it may have pending at once. "+
			"Wait until they are sent or abandoned, or replay a shorter window.", b.Pending, b.Adding, b.Limit))
}

// codeReplayTooLarge is the typed code of the 400 for a window of more than
// maxReplay events.
const codeReplayTooLarge = "Webhook.ReplayTooLarge"

// attemptFilter reads the deliveries list's filters.
func attemptFilter(req *webhooksv1.ListWebhookDeliveriesRequest) (store.AttemptFilter, error) {
	var v apperr.Violations
	for i, t := range req.GetEventTypes() {
		if t != events.Test && !eventNameShape(t) {
			v.Add(fmt.Sprintf("EventTypes[%d]", i), "'%s' is not an event type.", t)
		}
	}
	return store.AttemptFilter{Success: req.Success, Events: req.GetEventTypes()}, v.Err()
}

// endpointOf resolves the path's endpoint in the principal's tenant; 404
// when it does not parse or is not the tenant's (deleted ones only when
// withDeleted).
func (a *server) endpointOf(ctx context.Context, p authctx.Principal, webhookID string, withDeleted bool) (store.Endpoint, error) {
	id, err := uuid.Parse(webhookID)
	if err != nil {
		return store.Endpoint{}, errWebhookNotFound
	}
	e, err := a.s.store.GetEndpoint(ctx, p.Tenant(), id, withDeleted)
	return db.Found(e, err, errWebhookNotFound)
}

// deliveryOf resolves the path's delivery (or attempt) of endpoint e; 404
// when it is not one of e's.
func (a *server) deliveryOf(ctx context.Context, e store.Endpoint, deliveryID string) (store.Delivery, error) {
	id, err := uuid.Parse(deliveryID)
	if err != nil {
		return store.Delivery{}, errDeliveryNotFound
	}
	d, err := a.s.store.FindDelivery(ctx, e.TenantID, e.ID, id)
	return db.Found(d, err, errDeliveryNotFound)
}

// GetWebhookDelivery returns one delivery with its attempts; a deleted
// endpoint's deliveries stay readable, as its list does.
func (a *server) GetWebhookDelivery(ctx context.Context, req *webhooksv1.GetWebhookDeliveryRequest) (*webhooksv1.GetWebhookDeliveryResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksView)
	if err != nil {
		return nil, err
	}
	e, err := a.endpointOf(ctx, p, req.GetWebhookId(), true)
	if err != nil {
		return nil, err
	}
	d, err := a.deliveryOf(ctx, e, req.GetDeliveryId())
	if err != nil {
		return nil, err
	}
	atts, err := a.s.store.DeliveryAttempts(ctx, d.TenantID, d.ID)
	if err != nil {
		return nil, err
	}
	return &webhooksv1.GetWebhookDeliveryResponse{Delivery: toDeliveryDetail(d, atts)}, nil
}

// RedeliverWebhookDelivery queues a delivery's event again as a new
// delivery. Sending needs webhooks:enabled, as the test event does.
func (a *server) RedeliverWebhookDelivery(ctx context.Context, req *webhooksv1.RedeliverWebhookDeliveryRequest) (*webhooksv1.RedeliverWebhookDeliveryResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksManage)
	if err != nil {
		return nil, err
	}
	e, err := a.endpointOf(ctx, p, req.GetWebhookId(), false)
	if err != nil {
		return nil, err
	}
	d, err := a.deliveryOf(ctx, e, req.GetDeliveryId())
	if err != nil {
		return nil, err
	}
	if !p.HasFeature(featureWebhooks) {
		return nil, errFeatureOff
	}
	nd, err := a.s.store.Redeliver(ctx, d.TenantID, d.ID, a.s.recoveryLimit)
	if err != nil {
		return nil, backlogError(err)
	}
	return &webhooksv1.RedeliverWebhookDeliveryResponse{Delivery: toDeliveryDetail(nd, nil)}, nil
}

// replayWindow is a validated replay request.
type replayWindow struct {
	since, until time.Time
	types        []string
}

// validateReplay checks the window and that the types are the endpoint's.
func validateReplay(req *webhooksv1.ReplayWebhookEventsRequest, e store.Endpoint, now time.Time) (replayWindow, error) {
	var v apperr.Violations
	w := replayWindow{until: now, types: e.EventTypes}
	if req.GetSince() == nil {
		v.Add("Since", "'Since' is required.")
	} else {
		w.since = req.GetSince().AsTime()
	}
	if req.GetUntil() != nil {
		w.until = req.GetUntil().AsTime()
	}
	if req.GetSince() != nil && !w.until.After(w.since) {
		v.Add("Until", "'Until' must be after 'Since'.")
	}
	if len(req.GetEventTypes()) > 0 {
		w.types = req.GetEventTypes()
		for i, t := range w.types {
			if !slices.Contains(e.EventTypes, t) {
				v.Add(fmt.Sprintf("EventTypes[%d]", i), "'%s' is not one of the endpoint's event types.", t)
			}
		}
	}
	return w, v.Err()
}

// ReplayWebhookEvents queues every matching event of a window for the
// endpoint, in commit order, as new deliveries.
func (a *server) ReplayWebhookEvents(ctx context.Context, req *webhooksv1.ReplayWebhookEventsRequest) (*webhooksv1.ReplayWebhookEventsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksManage)
	if err != nil {
		return nil, err
	}
	e, err := a.endpointOf(ctx, p, req.GetWebhookId(), false)
	if err != nil {
		return nil, err
	}
	w, err := validateReplay(req, e, a.s.now())
	if err != nil {
		return nil, err
	}
	if !p.HasFeature(featureWebhooks) {
		return nil, errFeatureOff
	}
	ds, err := a.replayDeliveries(ctx, p.TenantID, w)
	if err != nil {
		return nil, err
	}
	n, err := a.s.store.EnqueueReplay(ctx, e.TenantID, e.ID, ds, a.s.recoveryLimit)
	if err != nil {
		return nil, backlogError(err)
	}
	return &webhooksv1.ReplayWebhookEventsResponse{Enqueued: int32(n)}, nil
}

// replayDeliveries reads the window's events (at most maxReplay, else a
// 400 with the count) and makes their deliveries.
func (a *server) replayDeliveries(ctx context.Context, tenantID string, w replayWindow) ([]store.NewDelivery, error) {
	q := audit.WindowQuery{TenantID: tenantID, Events: w.types, Since: w.since, Until: w.until}
	n, err := audit.CountWindow(ctx, a.s.store.Pool(), q)
	if err != nil {
		return nil, err
	}
	if n > maxReplay {
		return nil, apperr.Rule(codeReplayTooLarge, fmt.Sprintf(
			"The window holds %d matching events, %d more than the %d one replay may queue; replay shorter windows.", n, n-maxReplay, maxReplay))
	}
	evs, err := audit.ReadWindow(ctx, a.s.store.Pool(), q, maxReplay)
	if err != nil {
		return nil, err
	}
	// Events are replayed whatever the flag was when they occurred: the
	// caller asks for them by name.
	return a.s.dispatcher.deliveries(evs, Firing{On: true})
}
