package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/structpb"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/wirejson"
)

// The feed's limits (docs/events.md).
const (
	// MinEventRetention is the least ALMONER_EVENT_RETENTION may be: the
	// feed promises at least 30 days.
	MinEventRetention = 30 * 24 * time.Hour
	defaultFeedLimit  = 100
	maxFeedLimit      = 1000
)

// codeCursorExpired is the typed code of the 410 for a cursor issued
// before the feed's retention.
const codeCursorExpired = "Events.CursorExpired"

var errEventNotFound = apperr.NotFound("Event")

// eventMessage renders an audit row as the event body: the one rendering,
// which the feed answers and the dispatcher sends (buildBody), so a feed
// item and a delivery of the same event are the same JSON.
func eventMessage(e audit.Event) (*webhooksv1.Event, error) {
	var changes *structpb.Struct
	if len(e.Changes) > 0 && string(e.Changes) != "null" {
		var m map[string]any
		if err := json.Unmarshal(e.Changes, &m); err != nil {
			return nil, fmt.Errorf("event %s: changes: %w", e.EventID, err)
		}
		var err error
		if changes, err = structpb.NewStruct(m); err != nil {
			return nil, fmt.Errorf("event %s: changes: %w", e.EventID, err)
		}
	}
	data := &webhooksv1.EventData{EntityType: e.EntityType, EntityId: e.EntityID, Action: e.Action, Changes: changes, UserId: e.Actor}
	// Present only for a change made through an impersonation: a oneof
	// member the codec leaves out when unset.
	if e.Impersonator != "" {
		data.Impersonation = &webhooksv1.EventData_ImpersonatorId{ImpersonatorId: e.Impersonator}
	}
	return &webhooksv1.Event{Id: e.EventID, Event: e.Event, Timestamp: e.OccurredAt.UTC().Format(time.RFC3339Nano), Data: data}, nil
}

// buildBody renders an audit row as the event body sent on every attempt:
// eventMessage in the REST edge's JSON codec, byte for byte what the feed
// answers for the event.
func buildBody(e audit.Event) ([]byte, error) {
	m, err := eventMessage(e)
	if err != nil {
		return nil, err
	}
	return wirejson.Marshal(m)
}

// eventServer serves the public REST resource /api/tenants/{tid}/events.
type eventServer struct {
	webhooksv1.UnimplementedEventServiceServer
	s *Service
}

// feedQuery is a validated ListEvents request.
type feedQuery struct {
	limit      int
	types      []string
	entityType string
	entityID   string
}

// ListEvents returns one page of the tenant's feed.
func (a *eventServer) ListEvents(ctx context.Context, req *webhooksv1.ListEventsRequest) (*webhooksv1.ListEventsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.EventsView)
	if err != nil {
		return nil, err
	}
	q, err := validateFeedQuery(req)
	if err != nil {
		return nil, err
	}
	now := a.s.now()
	from, err := a.feedStart(ctx, p.TenantID, req.GetAfter(), now)
	if err != nil {
		return nil, err
	}
	// One more than the page: hasMore says whether that one exists.
	page, err := a.readFeed(ctx, audit.ReadQuery{
		After: from, TenantID: p.TenantID, Events: q.types, EntityType: q.entityType, EntityID: q.entityID, Limit: q.limit + 1,
	})
	if err != nil {
		return nil, err
	}
	return a.feedPage(p.TenantID, page, q.limit, now)
}

// readFeed reads a page of the feed: from the read replica when one is
// configured, within its lag bound, and the page there is full (history
// beyond the live tail), else from the primary. A full page's cursor is
// its last event, a row the primary has committed (the standby replays
// only commits) and below which the standby and the primary hold the same
// rows (every event it returns is below the standby's snapshot horizon).
// A page short of rq.Limit reached the tail: its cursor would be the
// horizon, so it is read again on the primary, whose tail is the live one.
func (a *eventServer) readFeed(ctx context.Context, rq audit.ReadQuery) (audit.Page, error) {
	primary, reads := a.s.store.Pool(), a.s.store.Reads()
	if !reads.HasStandby() {
		return audit.Read(ctx, primary, rq)
	}
	var (
		page      audit.Page
		onPrimary bool
	)
	err := reads.Do(ctx, func(p *pgxpool.Pool) error {
		var err error
		onPrimary = p == primary
		page, err = audit.Read(ctx, p, rq)
		return err
	})
	if err == nil && (onPrimary || len(page.Events) >= rq.Limit) {
		return page, nil
	}
	return audit.Read(ctx, primary, rq)
}

// validateFeedQuery checks the query's limit, types and entity filters.
func validateFeedQuery(req *webhooksv1.ListEventsRequest) (feedQuery, error) {
	var v apperr.Violations
	q := feedQuery{limit: defaultFeedLimit, types: req.GetTypes(), entityType: req.GetEntityType(), entityID: req.GetEntityId()}
	if req.Limit != nil {
		q.limit = int(req.GetLimit())
		if q.limit < 1 || q.limit > maxFeedLimit {
			v.Add("Limit", "'Limit' must be between 1 and %d.", maxFeedLimit)
		}
	}
	for i, t := range q.types {
		if !eventNameShape(t) {
			v.Add(fmt.Sprintf("Types[%d]", i), "'%s' is not an event type (<entity>.created, .updated or .deleted).", t)
		}
	}
	if q.entityID != "" && q.entityType == "" {
		v.Add("EntityId", "'EntityId' needs 'EntityType'.")
	}
	return q, v.Err()
}

// eventNameShape reports whether name has the form of an audit event
// name, snake_case entity and one of the three actions. The feed holds
// every event of the tenant, those outside the subscribable catalog
// (webhook_endpoint.*) too.
func eventNameShape(name string) bool {
	entity, action, ok := strings.Cut(name, ".")
	if !ok || entity == "" || (action != "created" && action != "updated" && action != "deleted") {
		return false
	}
	for _, r := range entity {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}

// feedStart is the audit position a page starts after: the first event
// within retention when the client sent no cursor, the cursor's position
// otherwise: 400 Events.InvalidCursor when the feed did not sign it for
// this tenant, 410 when its signed issue time is before the retention
// window.
func (a *eventServer) feedStart(ctx context.Context, tenantID, after string, now time.Time) (audit.Cursor, error) {
	oldest := now.Add(-a.s.cfg.EventRetention)
	if after == "" {
		return audit.StartAt(ctx, a.s.store.Pool(), tenantID, oldest)
	}
	c, err := a.s.cursors.parse(tenantID, after, now)
	if err != nil {
		return audit.Cursor{}, err
	}
	if c.issued.Before(oldest) {
		return audit.Cursor{}, apperr.Gone(codeCursorExpired, fmt.Sprintf(
			"The cursor was issued on %s, before the feed's retention of %s: read the feed again without 'after'.",
			c.issued.UTC().Format(time.RFC3339), retentionText(a.s.cfg.EventRetention)))
	}
	return c.at, nil
}

// retentionText says a retention in days when it is whole days.
func retentionText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " days"
	}
	return d.String()
}

// feedPage makes the response from a read of up to limit+1 events, with
// the tenant's signed cursor after it.
func (a *eventServer) feedPage(tenantID string, page audit.Page, limit int, now time.Time) (*webhooksv1.ListEventsResponse, error) {
	events, next := page.Events, page.Next
	more := len(events) > limit
	if more {
		events = events[:limit]
		last := events[limit-1]
		next = audit.Cursor{XID: last.XID, ID: last.Seq}
	}
	out := &webhooksv1.ListEventsResponse{Items: make([]*webhooksv1.Event, 0, len(events)), HasMore: more}
	for _, e := range events {
		m, err := eventMessage(e)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, m)
	}
	out.NextCursor = a.s.cursors.sign(tenantID, feedCursor{at: next, issued: now})
	return out, nil
}

// GetEvent returns one event of the tenant.
func (a *eventServer) GetEvent(ctx context.Context, req *webhooksv1.GetEventRequest) (*webhooksv1.GetEventResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.EventsView)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(req.GetEventId())
	if err != nil {
		return nil, errEventNotFound
	}
	e, ok, err := audit.Get(ctx, a.s.store.Pool(), p.TenantID, id.String())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errEventNotFound
	}
	m, err := eventMessage(e)
	if err != nil {
		return nil, err
	}
	return &webhooksv1.GetEventResponse{Event: m}, nil
}

// errNoRetention is ConfigFrom's refusal of a retention under the minimum.
var errNoRetention = errors.New("ALMONER_EVENT_RETENTION: the event feed keeps at least 30 days (720h)")
