package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The platform's operations log (docs/operators.md): each kind is read
// from where it is already recorded — auth's own tables and the audit
// log, and for other services' work the operations_v1 view each owner
// publishes (imports, orders, reports, webhooks), so auth reads no table of
// another service.

// Operation kinds.
const (
	OpImport              = "import"
	OpTaxStatementRun     = "tax_statement_run"
	OpLetterRun           = "letter_run"
	OpWebhookAutoDisable  = "webhook_auto_disable"
	OpNotificationRefused = "processor_notification_refused"
	OpTenantCreated       = "tenant_created"
	OpTenantDeactivated   = "tenant_deactivated"
	OpImpersonation       = "impersonation"
)

// OperationKinds are the kinds the log reads, in documentation order.
var OperationKinds = []string{OpImport, OpTaxStatementRun, OpLetterRun, OpWebhookAutoDisable, OpNotificationRefused, OpTenantCreated, OpTenantDeactivated, OpImpersonation}

// Operation is one row of the log.
type Operation struct {
	ID, Kind, Status, Detail string
	TenantID                 uuid.UUID
	StartedAt                time.Time
	FinishedAt               *time.Time
}

// OperationQuery filters and pages the log; a zero TenantID and an empty
// Kind select everything.
type OperationQuery struct {
	TenantID uuid.UUID
	Kind     string
	Limit    int32
	Offset   int64
}

const operationsSQL = `
	WITH ops AS (
		SELECT id, tenant_id, kind, status, started_at, finished_at, detail FROM imports.operations_v1
		UNION ALL
		SELECT id, tenant_id, kind, status, started_at, finished_at, detail FROM reports.operations_v1
		UNION ALL
		SELECT id, tenant_id, kind, status, started_at, finished_at, detail FROM webhooks.operations_v1
		UNION ALL
		SELECT id, tenant_id, kind, status, started_at, finished_at, detail FROM orders.operations_v1
		UNION ALL
		SELECT id::text, id, 'tenant_created', 'succeeded', created_at, created_at, slug
		FROM auth.tenants
		UNION ALL
		SELECT event_id::text, tenant_id, 'tenant_deactivated', 'succeeded', occurred_at, occurred_at, actor
		FROM audit.events WHERE entity_type = 'Tenant' AND action = 'Updated' AND changes -> 'active' ->> 'new' = 'false'
		UNION ALL
		SELECT id::text, tenant_id, 'impersonation', CASE WHEN ended_at IS NULL THEN 'running' ELSE 'ended' END, started_at, ended_at, reason
		FROM auth.impersonations
	)
	SELECT id, tenant_id, kind, status, started_at, finished_at, coalesce(detail, ''), count(*) OVER ()
	FROM ops WHERE ($1::uuid IS NULL OR tenant_id = $1) AND ($2 = '' OR kind = $2)
	ORDER BY started_at DESC, id DESC LIMIT $3 OFFSET $4`

// ListOperations returns a page of the log, newest first, with the count
// of all matches (0 on a page past the end).
func (s *Store) ListOperations(ctx context.Context, q OperationQuery) ([]Operation, int64, error) {
	var tenant *uuid.UUID
	if q.TenantID != uuid.Nil {
		tenant = &q.TenantID
	}
	rows, err := s.pool.Query(ctx, operationsSQL, tenant, q.Kind, q.Limit, q.Offset)
	if err != nil {
		return nil, 0, wrapDB(err, "list operations")
	}
	var total int64
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Operation, error) {
		var o Operation
		err := r.Scan(&o.ID, &o.TenantID, &o.Kind, &o.Status, &o.StartedAt, &o.FinishedAt, &o.Detail, &total)
		return o, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("auth: list operations: %w", err)
	}
	return out, total, nil
}
