// Package audit owns the shared audit log (schema audit): the writer every
// service calls inside its own transactions, and the readers that the
// webhook dispatcher and the audit feeds use.
package audit

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the audit schema's migrations.
func Migrations() db.Migrations {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return db.Migrations{Schema: "audit", FS: sub}
}

// The actions an audit row records.
const (
	Created = "Created"
	Updated = "Updated"
	Deleted = "Deleted"
)

// Change is the old and new value of one changed property.
type Change struct {
	Old any `json:"old"`
	New any `json:"new"`
}

// Entry is one audit row to write.
type Entry struct {
	TenantID string
	// EntityType is the entity's PascalCase name, e.g. "Contact", "OrderPayment".
	EntityType string
	EntityID   string
	// Action is Created, Updated or Deleted.
	Action string
	// Changes is set on Updated: property name → old and new value. A
	// Deleted row may carry them too, to say what the deletion was (a
	// merged contact's {"mergedInto": {old: null, new: <survivor>}}).
	Changes map[string]Change
	// Actor is api-key:<keyPrefix> or "system".
	Actor string
}

// EventName maps an entity type and action to the webhook event name:
// ("OrderPayment", "Created") → "order_payment.created".
func EventName(entityType, action string) string {
	var b strings.Builder
	for i, r := range entityType {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String() + "." + strings.ToLower(action)
}

// Record appends e inside tx, the transaction that makes the change.
func Record(ctx context.Context, tx pgx.Tx, e Entry) error {
	args, err := insertArgs(ctx, e)
	if err != nil {
		return err
	}
	if _, err = tx.Exec(ctx, insertSQL, args...); err != nil {
		return fmt.Errorf("audit: record %s %s: %w", e.EntityType, e.Action, err)
	}
	return nil
}

// Queue adds e's insert to b (keeping ctx's span context, as Record does), a batch that the caller sends inside the
// transaction that makes the change: a write path with several audit rows
// then pays one round trip for all of them instead of one each. Rows are
// numbered in queue order, as consecutive Record calls would number them.
func Queue(ctx context.Context, b *pgx.Batch, e Entry) error {
	args, err := insertArgs(ctx, e)
	if err != nil {
		return err
	}
	b.Queue(insertSQL, args...)
	return nil
}

// QueueAll adds one insert of every entry to b: the rows of one change
// (an order with its lines and payments) cost one statement instead of one
// each. Entries must share tenant and actor; they are numbered in slice
// order, as consecutive Record calls would number them.
func QueueAll(ctx context.Context, b *pgx.Batch, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	n := len(entries)
	ids := make([]uuid.UUID, n)
	types, entityIDs, actions, events := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	changes := make([]*string, n)
	for i, e := range entries {
		if e.TenantID != entries[0].TenantID || e.Actor != entries[0].Actor {
			return fmt.Errorf("audit: QueueAll entries of different tenants or actors")
		}
		args, err := insertArgs(ctx, e)
		if err != nil {
			return err
		}
		ids[i] = args[1].(uuid.UUID)
		types[i], entityIDs[i], actions[i], events[i] = e.EntityType, e.EntityID, e.Action, args[5].(string)
		if c := args[6].([]byte); c != nil {
			v := string(c)
			changes[i] = &v
		}
	}
	b.Queue(insertAllSQL, entries[0].TenantID, entries[0].Actor, TraceParent(ctx), ids, types, entityIDs, actions, events, changes, impersonator(ctx))
	return nil
}

const insertAllSQL = `
		INSERT INTO audit.events (tenant_id, event_id, entity_type, entity_id, action, event, changes, actor, trace_parent, impersonator)
		SELECT $1::uuid, u.event_id, u.entity_type, u.entity_id, u.action, u.event, u.changes::jsonb, $2, $3, $10
		FROM unnest($4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) WITH ORDINALITY
			AS u(event_id, entity_type, entity_id, action, event, changes, ord)
		ORDER BY u.ord`

const insertSQL = `
		INSERT INTO audit.events (tenant_id, event_id, entity_type, entity_id, action, event, changes, actor, trace_parent, impersonator)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// insertArgs checks e and returns the arguments of insertSQL; ctx's span
// context is kept with the row.
func insertArgs(ctx context.Context, e Entry) ([]any, error) {
	switch e.Action {
	case Created, Updated, Deleted:
	default:
		return nil, fmt.Errorf("audit: unknown action %q", e.Action)
	}
	var changes []byte
	if (e.Action == Updated || e.Action == Deleted) && len(e.Changes) > 0 {
		var err error
		if changes, err = json.Marshal(e.Changes); err != nil {
			return nil, fmt.Errorf("audit: encode changes: %w", err)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("audit: event id: %w", err)
	}
	return []any{e.TenantID, id, e.EntityType, e.EntityID, e.Action, EventName(e.EntityType, e.Action), changes, e.Actor, TraceParent(ctx), impersonator(ctx)}, nil
}

// impersonator is the operator of the call's impersonation
// (operator:<userId>), or nil: every row written while an operator works
// as a user names both, without each service passing it.
func impersonator(ctx context.Context) *string {
	if v := authctx.Impersonator(ctx); v != "" {
		return &v
	}
	return nil
}

// Diff returns the changes between two property snapshots, or nil when
// nothing changed. Values are compared by their JSON form.
func Diff(before, after map[string]any) map[string]Change {
	var out map[string]Change
	for k, nv := range after {
		ov := before[k]
		a, _ := json.Marshal(ov)
		b, _ := json.Marshal(nv)
		if string(a) != string(b) {
			if out == nil {
				out = map[string]Change{}
			}
			out[k] = Change{Old: ov, New: nv}
		}
	}
	return out
}

// Event is one audit row as readers see it.
type Event struct {
	// Seq is the row's id in the log.
	Seq int64
	// XID is the id of the transaction that wrote the row; with Seq it is
	// the row's Cursor.
	XID        uint64
	EventID    string
	TenantID   string
	EntityType string
	EntityID   string
	Action     string
	Event      string
	Changes    json.RawMessage
	Actor      string
	// Impersonator is operator:<userId> when the change was made through
	// an impersonation, "" otherwise.
	Impersonator string
	OccurredAt   time.Time
	// TraceParent is the W3C traceparent of the writer's span, empty when
	// it had none; see TraceParent.
	TraceParent string
}

// TraceParent renders the span context of ctx as a W3C traceparent
// header value, or nil when ctx carries no valid span context (the column
// stays NULL rather than holding a trace nobody recorded).
func TraceParent(ctx context.Context) *string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	v := fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
	return &v
}

// SpanContext parses a stored traceparent back into a remote span
// context; ok is false when s is empty or malformed.
func SpanContext(s string) (trace.SpanContext, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	switch parts[3] {
	case "01":
		flags = trace.FlagsSampled
	case "00":
	default:
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}
