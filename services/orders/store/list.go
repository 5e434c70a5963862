package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// OrderFilter narrows the order list. Zero values do not filter.
type OrderFilter struct {
	ContactID  *int64
	Status     string
	LineKind   string // Donation or Item
	FundID     *uuid.UUID
	CampaignID string
	BatchID    *uuid.UUID
	ScheduleID *uuid.UUID
	From, To   *time.Time
	MinAmount  *int64
	MaxAmount  *int64
	// AcknowledgementStatus keeps gifts of this status.
	AcknowledgementStatus string
}

// where builds the filter's SQL conditions after the tenant's ($1).
func (f OrderFilter) where(args []any) (string, []any) {
	var b strings.Builder
	b.WriteString("o.tenant_id = $1")
	add := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND " + strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.ContactID != nil {
		add("o.contact_id = ?", *f.ContactID)
	}
	if f.AcknowledgementStatus != "" {
		add("o.has_donations AND o.acknowledgement_status = ?", f.AcknowledgementStatus)
	}
	if f.Status != "" {
		add("o.status = ?", f.Status)
	}
	switch f.LineKind {
	case "Donation":
		b.WriteString(" AND o.has_donations")
	case "Item":
		b.WriteString(" AND o.has_items")
	}
	if f.FundID != nil {
		add("EXISTS (SELECT 1 FROM orders.order_donations d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.fund_id = ?)", *f.FundID)
	}
	if f.CampaignID != "" {
		add("EXISTS (SELECT 1 FROM orders.order_donations d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.campaign_id = ?)", f.CampaignID)
	}
	if f.BatchID != nil {
		add("o.batch_id = ?", *f.BatchID)
	}
	if f.ScheduleID != nil {
		add("(o.schedule_id = ? OR o.schedule_ids @> ARRAY[?::uuid])", *f.ScheduleID)
	}
	if f.From != nil {
		add("o.created_at >= ?", *f.From)
	}
	if f.To != nil {
		add("o.created_at < ?", *f.To)
	}
	if f.MinAmount != nil {
		add("o.total_minor >= ?", *f.MinAmount)
	}
	if f.MaxAmount != nil {
		add("o.total_minor <= ?", *f.MaxAmount)
	}
	return b.String(), args
}

// ListOrders returns a page of orders newest first (by id: UUIDv7 ids are
// time-ordered), with the count of every match unless skipCount (then the
// count is -1: a listing continued by its token carries the count it
// started with). after, when set, is the keyset cursor (the last id
// served); offset is used otherwise.
func (s *Store) ListOrders(ctx context.Context, tenantID uuid.UUID, f OrderFilter, limit int32, offset int64, after *uuid.UUID, skipCount bool) ([]Order, int64, error) {
	where, args := f.where([]any{tenantID})
	total := int64(-1)
	if !skipCount {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders.orders o WHERE `+where, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("orders: count orders: %w", err)
		}
	}
	q := `SELECT ` + prefixed("o.", orderColumns) + ` FROM orders.orders o WHERE ` + where
	if after != nil {
		args = append(args, *after)
		q += " AND o.id < $" + strconv.Itoa(len(args))
	}
	args = append(args, limit)
	q += " ORDER BY o.id DESC LIMIT $" + strconv.Itoa(len(args))
	if after == nil {
		args = append(args, offset)
		q += " OFFSET $" + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list orders: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) { return scanOrder(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list orders: %w", err)
	}
	if err := loadLines(ctx, s.pool, tenantID, list); err != nil {
		return nil, 0, fmt.Errorf("orders: list orders: %w", err)
	}
	return list, total, nil
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
