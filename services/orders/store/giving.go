package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Gift is one gift's date and net amount.
type Gift struct {
	Date        time.Time
	AmountMinor int64
}

// GivingTotal is a contact's giving in one currency.
type GivingTotal struct {
	Currency                     string
	LifetimeMinor, Count         int64
	First, Last, Largest         *Gift
	ThisYearMinor, LastYearMinor int64
}

// GivingSummary is a contact's giving.
type GivingSummary struct {
	Totals    []GivingTotal
	Recent    []Order
	Schedules []Schedule
}

// GivingSummary sums a contact's orders per currency, net of refunds,
// voided and fully refunded orders left out; "this year" is now's UTC year.
func (s *Store) GivingSummary(ctx context.Context, tenantID uuid.UUID, contactID int64, now time.Time, limit int32) (GivingSummary, error) {
	var out GivingSummary
	year := time.Date(now.UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	rows, err := s.pool.Query(ctx, `
		WITH g AS (
			SELECT currency, created_at, total_minor - refunded_minor AS net
			FROM orders.orders WHERE tenant_id = $1 AND contact_id = $2 AND status IN ('Completed', 'PartiallyRefunded'))
		SELECT currency, sum(net)::bigint, count(*),
			min(created_at), (array_agg(net ORDER BY created_at, net))[1],
			max(created_at), (array_agg(net ORDER BY created_at DESC, net DESC))[1],
			(array_agg(created_at ORDER BY net DESC, created_at))[1], max(net),
			coalesce(sum(net) FILTER (WHERE created_at >= $3), 0)::bigint,
			coalesce(sum(net) FILTER (WHERE created_at >= $4 AND created_at < $3), 0)::bigint
		FROM g GROUP BY currency ORDER BY currency`, tenantID, contactID, year, year.AddDate(-1, 0, 0))
	if err != nil {
		return out, fmt.Errorf("orders: giving summary: %w", err)
	}
	out.Totals, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (GivingTotal, error) {
		var t GivingTotal
		f, l, lg := &Gift{}, &Gift{}, &Gift{}
		err := r.Scan(&t.Currency, &t.LifetimeMinor, &t.Count, &f.Date, &f.AmountMinor, &l.Date, &l.AmountMinor, &lg.Date, &lg.AmountMinor, &t.ThisYearMinor, &t.LastYearMinor)
		t.First, t.Last, t.Largest = f, l, lg
		return t, err
	})
	if err != nil {
		return out, fmt.Errorf("orders: giving summary: %w", err)
	}
	rows, err = s.pool.Query(ctx, `SELECT `+orderColumns+` FROM orders.orders WHERE tenant_id = $1 AND contact_id = $2 ORDER BY id DESC LIMIT $3`, tenantID, contactID, limit)
	if err != nil {
		return out, fmt.Errorf("orders: giving summary: %w", err)
	}
	if out.Recent, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) { return scanOrder(r) }); err != nil {
		return out, fmt.Errorf("orders: giving summary: %w", err)
	}
	rows, err = s.pool.Query(ctx, `SELECT `+ScheduleColumns+` FROM orders.recurring_donations WHERE tenant_id = $1 AND contact_id = $2
		AND status IN ('active', 'past_due') ORDER BY id DESC`, tenantID, contactID)
	if err != nil {
		return out, fmt.Errorf("orders: giving summary: %w", err)
	}
	if out.Schedules, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Schedule, error) { return ScanSchedule(r) }); err != nil {
		return out, fmt.Errorf("orders: giving summary: %w", err)
	}
	return out, nil
}
