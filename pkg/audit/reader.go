package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier is what the readers need: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Cursor is a position in the log's commit-safe order: the (xid, id) of the
// last row a reader has seen. The zero Cursor is the start of the log.
//
// Ordering by id alone would skip rows: ids are taken when a row is
// inserted, but rows become visible when their transaction commits, so a
// row with a smaller id can appear after a larger one was read. Ordering by
// the writing transaction's id (xid) and reading only below the oldest
// transaction still running closes that gap; see docs/audit-log.md.
type Cursor struct {
	// XID is the writing transaction's id (PostgreSQL xid8).
	XID uint64
	// ID is the row's id within the log.
	ID int64
}

// String encodes c for storage, e.g. in a dispatcher's state row: "xid:id".
func (c Cursor) String() string {
	return strconv.FormatUint(c.XID, 10) + ":" + strconv.FormatInt(c.ID, 10)
}

// ErrBadCursor is returned by ParseCursor for text that String did not make.
var ErrBadCursor = errors.New("audit: bad cursor")

// ParseCursor decodes the text of Cursor.String; "" is the zero Cursor.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	x, i, ok := strings.Cut(s, ":")
	if !ok {
		return Cursor{}, ErrBadCursor
	}
	xid, err := strconv.ParseUint(x, 10, 64)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	id, err := strconv.ParseInt(i, 10, 64)
	if err != nil || id < 0 {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{XID: xid, ID: id}, nil
}

// Less reports whether c comes before d in reading order.
func (c Cursor) Less(d Cursor) bool {
	return c.XID < d.XID || c.XID == d.XID && c.ID < d.ID
}

// MaxReadLimit caps ReadQuery.Limit.
const MaxReadLimit = 10_000

// ReadQuery selects what Read returns.
type ReadQuery struct {
	// After is the cursor to continue from (exclusive).
	After Cursor
	// TenantID keeps one tenant's rows. It is required unless AllTenants
	// is set: a caller that forgot it would otherwise read every tenant's
	// events.
	TenantID string
	// AllTenants reads every tenant's rows (TenantID empty): operators'
	// tools and tests only.
	AllTenants bool
	// Events keeps rows whose event name is one of these
	// ("contact.created"); empty keeps every event.
	Events []string
	// EntityType keeps one entity type's rows ("Contact"); "" keeps all.
	EntityType string
	// EntityID keeps one entity's rows (with EntityType); "" keeps all.
	EntityID string
	// Limit is the most rows to return: 100 when 0, at most MaxReadLimit.
	Limit int
}

// Page is the result of Read.
type Page struct {
	// Events are the rows, in (xid, id) order.
	Events []Event
	// Next is the cursor to pass as After on the next call. It can be past
	// the last event: when fewer than Limit rows matched, every row below
	// the horizon has been seen, so Next jumps to the horizon and the next
	// call does not rescan rows the filters skipped.
	Next Cursor
}

const eventColumns = `e.tenant_id::text, e.id, e.xid, e.event_id::text, e.entity_type, e.entity_id, e.action, e.event, e.changes, e.actor, e.occurred_at, coalesce(e.trace_parent, ''), coalesce(e.impersonator, '')`

func scanEvent(row pgx.Row) (Event, error) {
	var e Event
	err := row.Scan(&e.TenantID, &e.Seq, &e.XID, &e.EventID, &e.EntityType, &e.EntityID, &e.Action, &e.Event, &e.Changes, &e.Actor, &e.OccurredAt, &e.TraceParent, &e.Impersonator)
	return e, err
}

// ErrNoTenant refuses a ReadQuery that names no tenant and does not ask
// for every tenant's rows.
var ErrNoTenant = errors.New("audit: read: no tenant (set TenantID, or AllTenants to read every tenant)")

// Read returns the rows after q.After that no later read could place before
// them: rows of transactions that ended before every transaction still in
// flight began (xid < pg_snapshot_xmin of the statement's snapshot), in
// (xid, id) order. A row whose transaction is still open, or that committed
// while an older transaction is still open, is returned by a later call, so
// a reader that always continues from Page.Next sees every row exactly once.
//
// Run it outside a transaction that has written: that transaction's own
// xid holds the horizon back. A long transaction anywhere in the cluster
// holds it back too; rows then arrive late, never out of order.
func Read(ctx context.Context, q Querier, rq ReadQuery) (Page, error) {
	if rq.TenantID == "" && !rq.AllTenants {
		return Page{}, ErrNoTenant
	}
	limit := min(rq.Limit, MaxReadLimit)
	if limit <= 0 {
		limit = 100
	}
	sql, args := readSQL(rq, limit)
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, fmt.Errorf("audit: read: %w", err)
	}
	events, horizon, err := collectRead(rows)
	if err != nil {
		return Page{}, err
	}
	page := Page{Events: events, Next: rq.After}
	if n := len(events); n > 0 {
		page.Next = Cursor{XID: events[n-1].XID, ID: events[n-1].Seq}
	}
	if len(events) < limit {
		// Every qualifying row below the horizon was returned, so nothing
		// between here and the horizon is left to read. Ids start at 1, so
		// (horizon, 0) is just before the horizon's first possible row.
		if h := (Cursor{XID: horizon}); page.Next.Less(h) {
			page.Next = h
		}
	}
	return page, nil
}

// readSQL is Read's statement for rq: up to limit rows after rq.After
// below the horizon, with rq's filters, each row with the horizon.
func readSQL(rq ReadQuery, limit int) (string, []any) {
	args := []any{rq.After.XID, rq.After.ID, limit}
	where := []string{`(e.xid, e.id) > ($1::xid8, $2::bigint)`, `e.xid < h.xmin`}
	filter := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if rq.TenantID != "" {
		filter(`e.tenant_id = $%d::uuid`, rq.TenantID)
	}
	if len(rq.Events) > 0 {
		filter(`e.event = ANY($%d::text[])`, rq.Events)
	}
	if rq.EntityType != "" {
		filter(`e.entity_type = $%d`, rq.EntityType)
	}
	if rq.EntityID != "" {
		filter(`e.entity_id = $%d`, rq.EntityID)
	}
	// The horizon and the rows come from one statement, hence one snapshot:
	// a horizon read by a later statement could be newer than the rows and
	// let Next jump over a row that committed in between. The LEFT JOIN
	// returns the horizon even when no row qualifies.
	return `
		WITH h AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
		rows AS (
			SELECT ` + eventColumns + ` FROM audit.events e, h
			WHERE ` + strings.Join(where, " AND ") + `
			ORDER BY e.xid, e.id
			LIMIT $3
		)
		SELECT h.xmin, rows.* FROM h LEFT JOIN rows ON true
		ORDER BY rows.xid, rows.id`, args
}

// collectRead scans readSQL's rows: the events, and the horizon every row
// carries (the only row of an empty result carries nothing else).
func collectRead(rows pgx.Rows) ([]Event, uint64, error) {
	defer rows.Close()
	var events []Event
	var horizon uint64
	for rows.Next() {
		var (
			tenant, eventID, entityType, entityID, action, event, actor *string
			seq                                                         *int64
			xid                                                         *uint64
			changes                                                     []byte
			occurred                                                    *time.Time
			traceParent, impersonator                                   *string
		)
		if err := rows.Scan(&horizon, &tenant, &seq, &xid, &eventID, &entityType, &entityID, &action, &event, &changes, &actor, &occurred, &traceParent,
			&impersonator); err != nil {
			return nil, 0, fmt.Errorf("audit: read: %w", err)
		}
		if seq == nil {
			continue // the horizon-only row of an empty result
		}
		events = append(events, Event{Seq: *seq, XID: *xid, TenantID: *tenant, EventID: *eventID,
			EntityType: *entityType, EntityID: *entityID, Action: *action, Event: *event, Changes: changes,
			Actor: *actor, OccurredAt: *occurred, TraceParent: *traceParent, Impersonator: *impersonator})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("audit: read: %w", err)
	}
	return events, horizon, nil
}

// startSlack bounds how long a transaction may run before its first write
// for StartAt to still place its rows after the start; see StartAt.
const startSlack = time.Minute

// StartAt returns the cursor from which a tenant's reader sees every row
// that occurred at or after since: a reader beginning there (with Read)
// misses none of them, and may also see a few older rows.
//
// Rows are read in (xid, id) order, but occurred_at is the writing
// transaction's start and a transaction takes its xid at its first write,
// so the two orders differ slightly. The start is the smallest xid among
// the rows that occurred within startSlack of the first row at or after
// since (found with the events_tenant_occurred index, not by walking the
// tenant's history), and never past the horizon (a transaction still in
// flight may have begun within the window). A row that occurred after
// since but has an xid below that start needs a transaction that ran
// longer than startSlack before its first write while another began and
// wrote: such a transaction also holds every reader back for as long
// (docs/audit-log.md).
func StartAt(ctx context.Context, q Querier, tenantID string, since time.Time) (Cursor, error) {
	var xid uint64
	err := q.QueryRow(ctx, `
		WITH h AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
		f AS (
			SELECT occurred_at FROM audit.events
			WHERE tenant_id = $1::uuid AND occurred_at >= $2
			ORDER BY occurred_at LIMIT 1
		)
		SELECT least(h.xmin, (
			SELECT min(e.xid) FROM audit.events e, f
			WHERE e.tenant_id = $1::uuid AND e.occurred_at >= f.occurred_at
				AND e.occurred_at < f.occurred_at + $3::bigint * interval '1 microsecond'
		)) FROM h`, tenantID, since, startSlack.Microseconds()).Scan(&xid)
	if err != nil {
		return Cursor{}, fmt.Errorf("audit: start at %s: %w", since.Format(time.RFC3339), err)
	}
	return Cursor{XID: xid}, nil
}

// Get returns one row of a tenant by its event id; ok is false when the
// tenant has no such row.
func Get(ctx context.Context, q Querier, tenantID, eventID string) (Event, bool, error) {
	e, err := scanEvent(q.QueryRow(ctx, `SELECT `+eventColumns+` FROM audit.events e
		WHERE e.event_id = $2::uuid AND e.tenant_id = $1::uuid`, tenantID, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, fmt.Errorf("audit: get event %s: %w", eventID, err)
	}
	return e, true, nil
}

// WindowQuery selects a tenant's rows that occurred in [Since, Until).
type WindowQuery struct {
	TenantID string
	// Events keeps rows of these event names; empty keeps every event.
	Events []string
	Since  time.Time
	Until  time.Time
}

const windowWhere = `e.tenant_id = $1::uuid AND e.occurred_at >= $2 AND e.occurred_at < $3
	AND (cardinality($4::text[]) = 0 OR e.event = ANY($4))`

func (w WindowQuery) args() []any {
	events := w.Events
	if events == nil {
		events = []string{}
	}
	return []any{w.TenantID, w.Since, w.Until, events}
}

// CountWindow counts the committed rows of a window (a replay's size).
func CountWindow(ctx context.Context, q Querier, w WindowQuery) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `SELECT count(*) FROM audit.events e WHERE `+windowWhere, w.args()...).Scan(&n); err != nil {
		return 0, fmt.Errorf("audit: count window: %w", err)
	}
	return n, nil
}

// ReadWindow returns up to limit committed rows of a window in (xid, id)
// order, the order of their commits as Read gives it. Unlike Read it does
// not stop at the horizon: it is a one-off look at what has committed, not
// a cursor that must never pass a row.
func ReadWindow(ctx context.Context, q Querier, w WindowQuery, limit int) ([]Event, error) {
	rows, err := q.Query(ctx, `SELECT `+eventColumns+` FROM audit.events e WHERE `+windowWhere+`
		ORDER BY e.xid, e.id LIMIT $5`, append(w.args(), limit)...)
	if err != nil {
		return nil, fmt.Errorf("audit: read window: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("audit: read window: %w", err)
	}
	return events, nil
}

// EntityQuery selects one entity's rows for an audit feed.
type EntityQuery struct {
	TenantID   string
	EntityType string
	EntityID   string
	// BeforeSeq continues a newest-first feed below this row id (0: from
	// the newest).
	BeforeSeq int64
	// Offset skips rows (page-number paging); used only when BeforeSeq is 0.
	Offset int64
	// Limit is the page size.
	Limit int
}

// ListEntity returns one entity's rows, newest first. A feed of one entity
// may order by id: the writers of one entity serialize on its row lock, so
// their rows commit in id order.
func ListEntity(ctx context.Context, q Querier, eq EntityQuery) ([]Event, error) {
	args := []any{eq.TenantID, eq.EntityType, eq.EntityID, eq.Limit}
	cond := ""
	offset := ""
	if eq.BeforeSeq > 0 {
		args = append(args, eq.BeforeSeq)
		cond = ` AND e.id < $5`
	} else if eq.Offset > 0 {
		args = append(args, eq.Offset)
		offset = ` OFFSET $5`
	}
	rows, err := q.Query(ctx, `
		SELECT `+eventColumns+` FROM audit.events e
		WHERE e.tenant_id = $1::uuid AND e.entity_type = $2 AND e.entity_id = $3`+cond+`
		ORDER BY e.id DESC LIMIT $4`+offset, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: list entity: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("audit: list entity: %w", err)
	}
	return events, nil
}

// CountEntity counts one entity's rows.
func CountEntity(ctx context.Context, q Querier, tenantID, entityType, entityID string) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT count(*) FROM audit.events WHERE tenant_id = $1::uuid AND entity_type = $2 AND entity_id = $3`,
		tenantID, entityType, entityID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("audit: count entity: %w", err)
	}
	return n, nil
}
