package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/events"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/wirejson"
	"github.com/almoner/almoner/services/webhooks/store"
)

// server serves the public REST resource /api/tenants/{tid}/webhooks.
type server struct {
	webhooksv1.UnimplementedWebhookServiceServer
	s *Service
}

// ListWebhooks returns the tenant's endpoints, never with secrets.
func (a *server) ListWebhooks(ctx context.Context, req *webhooksv1.ListWebhooksRequest) (*webhooksv1.ListWebhooksResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksView)
	if err != nil {
		return nil, err
	}
	eps, err := a.s.store.ListEndpoints(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	out := &webhooksv1.ListWebhooksResponse{Webhooks: make([]*webhooksv1.Webhook, 0, len(eps))}
	for _, e := range eps {
		out.Webhooks = append(out.Webhooks, toWebhook(e))
	}
	return out, nil
}

// CreateWebhook registers an endpoint with a new secret, shown only here.
func (a *server) CreateWebhook(ctx context.Context, req *webhooksv1.CreateWebhookRequest) (*webhooksv1.CreateWebhookResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksManage)
	if err != nil {
		return nil, err
	}
	in, err := a.s.policy.validate(ctx, endpointInput{Name: req.GetName(), URL: req.GetUrl(), Description: req.GetDescription(), EventTypes: req.GetEventTypes()})
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	secret := newSecret()
	e, err := a.s.store.CreateEndpointLimited(ctx, store.Endpoint{
		TenantID: p.Tenant(), ID: id, Name: in.Name, URL: in.URL, Description: in.Description,
		EventTypes: in.EventTypes, SecretBox: a.s.sealer.Seal([]byte(secret), id[:]),
	}, p.Actor(), a.s.cfg.EndpointLimit)
	if errors.Is(err, store.ErrEndpointLimit) {
		return nil, a.s.endpointLimitError()
	}
	if err != nil {
		return nil, err
	}
	return &webhooksv1.CreateWebhookResponse{Webhook: &webhooksv1.CreatedWebhook{
		Id: e.ID.String(), Name: e.Name, Url: e.URL, EventTypes: e.EventTypes, Secret: secret,
	}}, nil
}

// UpdateWebhook replaces an endpoint's editable fields; never the secret.
func (a *server) UpdateWebhook(ctx context.Context, req *webhooksv1.UpdateWebhookRequest) (*webhooksv1.UpdateWebhookResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksManage)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	id, err := uuid.Parse(req.GetWebhookId())
	if err != nil {
		return nil, errWebhookNotFound
	}
	// A path that does not resolve is 404 whatever the body holds.
	if _, err := a.s.store.GetEndpoint(ctx, tenantID, id, false); errors.Is(err, db.ErrNotFound) {
		return nil, errWebhookNotFound
	} else if err != nil {
		return nil, err
	}
	in, err := a.s.policy.validate(ctx, endpointInput{Name: req.GetName(), URL: req.GetUrl(), Description: req.GetDescription(), EventTypes: req.GetEventTypes()})
	if err != nil {
		return nil, err
	}
	active := true
	if req.Active != nil {
		active = *req.Active
	}
	e, err := a.s.store.UpdateEndpoint(ctx, store.Endpoint{
		TenantID: tenantID, ID: id, Name: in.Name, URL: in.URL, Description: in.Description, EventTypes: in.EventTypes, Active: active,
	}, p.Actor(), a.s.cfg.EndpointLimit)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errWebhookNotFound
	}
	if errors.Is(err, store.ErrEndpointLimit) {
		return nil, a.s.endpointLimitError()
	}
	if err != nil {
		return nil, err
	}
	return &webhooksv1.UpdateWebhookResponse{Webhook: toWebhook(e)}, nil
}

// DeleteWebhook revokes an endpoint.
func (a *server) DeleteWebhook(ctx context.Context, req *webhooksv1.DeleteWebhookRequest) (*webhooksv1.DeleteWebhookResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksManage)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(req.GetWebhookId())
	if err != nil {
		return nil, errWebhookNotFound
	}
	err = a.s.store.DeleteEndpoint(ctx, p.Tenant(), id, p.Actor())
	if errors.Is(err, db.ErrNotFound) {
		return nil, errWebhookNotFound
	}
	if err != nil {
		return nil, err
	}
	return &webhooksv1.DeleteWebhookResponse{}, nil
}

// ListWebhookEventTypes returns the catalog of pkg/events.
func (a *server) ListWebhookEventTypes(ctx context.Context, req *webhooksv1.ListWebhookEventTypesRequest) (*webhooksv1.ListWebhookEventTypesResponse, error) {
	if _, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksView); err != nil {
		return nil, err
	}
	cat := events.Catalog()
	out := &webhooksv1.ListWebhookEventTypesResponse{EventTypes: make([]*webhooksv1.EventType, 0, len(cat))}
	for _, t := range cat {
		out.EventTypes = append(out.EventTypes, &webhooksv1.EventType{Name: t.Name, Description: t.Description})
	}
	return out, nil
}

// ListWebhookDeliveries returns one page of an endpoint's attempts; a
// deleted endpoint's records stay readable.
func (a *server) ListWebhookDeliveries(ctx context.Context, req *webhooksv1.ListWebhookDeliveriesRequest) (*webhooksv1.ListWebhookDeliveriesResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	id, err := uuid.Parse(req.GetWebhookId())
	if err != nil {
		return nil, errWebhookNotFound
	}
	if _, err := a.s.store.GetEndpoint(ctx, tenantID, id, true); errors.Is(err, db.ErrNotFound) {
		return nil, errWebhookNotFound
	} else if err != nil {
		return nil, err
	}
	f, err := attemptFilter(req)
	if err != nil {
		return nil, err
	}
	atts, total, err := a.s.store.ListAttempts(ctx, tenantID, id, f, pg.Size, pg.Offset())
	if err != nil {
		return nil, err
	}
	out := &webhooksv1.ListWebhookDeliveriesResponse{Items: make([]*webhooksv1.WebhookDelivery, 0, len(atts)), TotalCount: total, Page: pg.Number, PageSize: pg.Size}
	for _, at := range atts {
		out.Items = append(out.Items, toDelivery(at))
	}
	return out, nil
}

// TestWebhook sends a synthetic webhook.test event to the endpoint now,
// records the attempt, and returns its record. It needs webhooks:enabled,
// like every delivery.
func (a *server) TestWebhook(ctx context.Context, req *webhooksv1.TestWebhookRequest) (*webhooksv1.TestWebhookResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.WebhooksManage)
	if err != nil {
		return nil, err
	}
	tenantID := p.Tenant()
	id, err := uuid.Parse(req.GetWebhookId())
	if err != nil {
		return nil, errWebhookNotFound
	}
	e, err := a.s.store.GetEndpoint(ctx, tenantID, id, false)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errWebhookNotFound
	}
	if err != nil {
		return nil, err
	}
	if !p.HasFeature(featureWebhooks) {
		return nil, errFeatureOff
	}
	eventID, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	body, err := wirejson.Marshal(&webhooksv1.Event{
		Id: eventID.String(), Event: events.Test, Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
		Data: &webhooksv1.EventData{EntityType: store.EntityType, EntityId: e.ID.String(), Action: "Test", UserId: p.Actor()},
	})
	if err != nil {
		return nil, err
	}
	// The send is not cut short by the caller going away: its record is
	// written either way. A secret that does not open is a failed attempt
	// like any other, recorded and answered as such.
	var r result
	if secret, ok := a.s.openSecret(e.TenantID, e.ID, e.SecretBox); ok {
		r = a.s.sender.send(context.WithoutCancel(ctx), e.URL, secret, events.Test, body)
	} else {
		r = unsealFailed()
	}
	metricAttempts.Inc()
	if !r.success() {
		metricFailures.Inc()
	}
	at := store.Attempt{
		TenantID: tenantID, ID: r.deliveryID, EndpointID: e.ID, EventID: eventID, Event: events.Test, Attempt: 1,
		AttemptedAt: r.started, Success: r.success(), StatusCode: r.status, Duration: r.duration, Error: r.err,
	}
	if err := a.s.store.InsertAttempt(ctx, at); err != nil {
		return nil, err
	}
	return &webhooksv1.TestWebhookResponse{Delivery: toDelivery(at)}, nil
}
