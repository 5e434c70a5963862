// Package auditlog serves the tenant's audit log (GET …/audit-logs): the
// audit rows the event feed reads, newest first, filtered, in pages after
// a cursor. docs/audit-log.md.
package auditlog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
)

// The page sizes.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Server serves AuditLogService.
type Server struct {
	webhooksv1.UnimplementedAuditLogServiceServer
	q audit.Querier
}

// New returns the server reading through q.
func New(q audit.Querier) *Server { return &Server{q: q} }

// ListAuditLogs returns a page of the tenant's audit rows.
func (s *Server) ListAuditLogs(ctx context.Context, req *webhooksv1.ListAuditLogsRequest) (*webhooksv1.ListAuditLogsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.AuditLogsView)
	if err != nil {
		return nil, err
	}
	lq, err := query(req)
	if err != nil {
		return nil, err
	}
	lq.TenantID = p.Tenant().String()
	limit := lq.Limit
	lq.Limit++
	rows, err := audit.List(ctx, s.q, lq)
	if err != nil {
		return nil, err
	}
	out := &webhooksv1.ListAuditLogsResponse{Items: make([]*webhooksv1.AuditLog, 0, len(rows))}
	if len(rows) > limit {
		rows, out.HasMore = rows[:limit], true
		out.NextCursor = cursor(rows[limit-1].Seq)
	}
	for _, e := range rows {
		item, err := toWire(e)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, item)
	}
	return out, nil
}

// query validates the request's filters and page.
func query(req *webhooksv1.ListAuditLogsRequest) (audit.LogQuery, error) {
	var v apperr.Violations
	lq := audit.LogQuery{Actor: req.GetActor(), Impersonator: req.GetImpersonatorId(), EntityType: req.GetEntityType(), EntityID: req.GetEntityId(),
		Action: req.GetAction(), Limit: DefaultLimit}
	if req.Limit != nil {
		if lq.Limit = int(req.GetLimit()); lq.Limit < 1 || lq.Limit > MaxLimit {
			v.Add("Limit", "'Limit' must be between 1 and %d.", MaxLimit)
		}
	}
	switch lq.Action {
	case "", audit.Created, audit.Updated, audit.Deleted:
	default:
		v.Add("Action", "'Action' must be Created, Updated or Deleted.")
	}
	if lq.EntityID != "" && lq.EntityType == "" {
		v.Add("EntityId", "'EntityId' needs 'EntityType'.")
	}
	lq.From, lq.To = paging.TimeBound(&v, "From", req.GetFrom()), paging.TimeBound(&v, "To", req.GetTo())
	if req.GetAfter() != "" {
		seq, ok := parseCursor(req.GetAfter())
		if !ok {
			v.Add("After", "'After' is not a cursor this API issued.")
		}
		lq.BeforeSeq = seq
	}
	return lq, v.Err()
}

const cursorPrefix = "al1:"

func cursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(seq, 10)))
}

func parseCursor(s string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseInt(rest, 10, 64)
	return seq, err == nil && seq > 0
}

// toWire renders a row; the trace id is the traceparent's.
func toWire(e audit.Event) (*webhooksv1.AuditLog, error) {
	out := &webhooksv1.AuditLog{Id: e.EventID, Timestamp: e.OccurredAt.UTC().Format(time.RFC3339Nano), EntityType: e.EntityType,
		EntityId: e.EntityID, Action: e.Action, Actor: e.Actor}
	if e.Impersonator != "" {
		out.ImpersonatorId = &e.Impersonator
	}
	if sc, ok := audit.SpanContext(e.TraceParent); ok {
		id := sc.TraceID().String()
		out.TraceId = &id
	}
	if len(e.Changes) > 0 && string(e.Changes) != "null" {
		var m map[string]any
		if err := json.Unmarshal(e.Changes, &m); err != nil {
			return nil, fmt.Errorf("audit row %s: changes: %w", e.EventID, err)
		}
		var err error
		if out.Changes, err = structpb.NewStruct(m); err != nil {
			return nil, fmt.Errorf("audit row %s: changes: %w", e.EventID, err)
		}
	}
	return out, nil
}
