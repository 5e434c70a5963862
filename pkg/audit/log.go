package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// LogQuery selects a tenant's audit rows for the audit-log view, newest
// first (docs/audit-log.md). Empty filters select everything.
type LogQuery struct {
	TenantID     string
	Actor        string
	Impersonator string
	EntityType   string
	EntityID     string
	Action       string
	// From and To bound occurred_at: From inclusive, To exclusive.
	From, To *time.Time
	// BeforeSeq continues below this row id (0: from the newest).
	BeforeSeq int64
	// Limit is the page size.
	Limit int
}

// where returns the query's conditions and arguments.
func (lq LogQuery) where() (string, []any) {
	args := []any{lq.TenantID}
	cond := `e.tenant_id = $1::uuid`
	add := func(sql string, v any) {
		args = append(args, v)
		cond += fmt.Sprintf(sql, "$"+strconv.Itoa(len(args)))
	}
	for _, f := range []struct{ col, v string }{
		{"e.actor", lq.Actor}, {"e.impersonator", lq.Impersonator}, {"e.entity_type", lq.EntityType}, {"e.entity_id", lq.EntityID}, {"e.action", lq.Action},
	} {
		if f.v != "" {
			add(" AND "+f.col+" = %s", f.v)
		}
	}
	if lq.From != nil {
		add(" AND e.occurred_at >= %s", *lq.From)
	}
	if lq.To != nil {
		add(" AND e.occurred_at < %s", *lq.To)
	}
	if lq.BeforeSeq > 0 {
		add(" AND e.id < %s", lq.BeforeSeq)
	}
	return cond, args
}

// List returns the rows lq selects, newest first (by row id: the order
// they were written), at most lq.Limit.
func List(ctx context.Context, q Querier, lq LogQuery) ([]Event, error) {
	cond, args := lq.where()
	args = append(args, lq.Limit)
	rows, err := q.Query(ctx, `SELECT `+eventColumns+` FROM audit.events e WHERE `+cond+`
		ORDER BY e.id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	return events, nil
}
