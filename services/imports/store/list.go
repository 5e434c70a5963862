package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// ListFilter narrows the import list. Zero values do not filter.
type ListFilter struct {
	// Statuses keeps imports in any of these statuses (never Uploading:
	// an upload in progress is listed under no filter).
	Statuses []string
	Kind     string
	// From (inclusive) and To (exclusive) bound created_at.
	From, To *time.Time
}

// Cursor is the keyset position of the import list: the sort key of the
// last import served. The list is newest first by (created_at, id); an
// import's created_at is set once, when its upload is queued, so the key
// of a listed import never changes.
type Cursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// where builds the filter's SQL conditions after the tenant's ($1).
func (f ListFilter) where(args []any) (string, []any) {
	var b strings.Builder
	b.WriteString("tenant_id = $1 AND status <> 'uploading'")
	add := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND " + strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if len(f.Statuses) > 0 {
		add("status = ANY(?::text[])", f.Statuses)
	}
	if f.Kind != "" {
		add("kind = ?", f.Kind)
	}
	if f.From != nil {
		add("created_at >= ?", *f.From)
	}
	if f.To != nil {
		add("created_at < ?", *f.To)
	}
	return b.String(), args
}

// List returns a page of the tenant's imports newest first, by
// (created_at, id), with the count of every match unless skipCount (then
// the count is -1: a listing continued by its token carries the count it
// started with). after, when set, is the keyset cursor (the last import
// served) and offset is not used: the page is the imports below it in
// the order, an index range scan however deep, and an import queued
// while a client pages (newer than the cursor) neither repeats nor hides
// one of the later pages as an offset would.
func (s *Store) List(ctx context.Context, tenantID uuid.UUID, f ListFilter, limit int32, offset int64, after *Cursor, skipCount bool) ([]Import, int64, error) {
	where, args := f.where([]any{tenantID})
	total := int64(-1)
	if !skipCount {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM imports.imports WHERE `+where, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("imports: count imports: %w", db.Interpret(err))
		}
	}
	q := `SELECT ` + importColumns + ` FROM imports.imports WHERE ` + where
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		q += fmt.Sprintf(" AND (created_at, id) < ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, limit)
	q += " ORDER BY created_at DESC, id DESC LIMIT $" + strconv.Itoa(len(args))
	if after == nil {
		args = append(args, offset)
		q += " OFFSET $" + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("imports: list imports: %w", db.Interpret(err))
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Import, error) { return scanImport(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("imports: list imports: %w", db.Interpret(err))
	}
	return list, total, nil
}
