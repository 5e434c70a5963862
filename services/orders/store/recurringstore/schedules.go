package recurringstore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/services/orders/recurring/schedule"
	"github.com/almoner/almoner/services/orders/store"
)

// ListSchedules returns a page of schedules, newest first.
func (s *Store) ListSchedules(ctx context.Context, tenantID uuid.UUID, contactID *int64, status string, limit int32, offset int64) ([]store.Schedule, int64, error) {
	var total int64
	const where = ` WHERE tenant_id = $1 AND ($2::bigint IS NULL OR contact_id = $2) AND ($3 = '' OR status = $3)`
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders.recurring_donations`+where, tenantID, contactID, status).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("orders: count schedules: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+store.ScheduleColumns+` FROM orders.recurring_donations`+where+` ORDER BY id DESC LIMIT $4 OFFSET $5`,
		tenantID, contactID, status, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list schedules: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Schedule, error) { return store.ScanSchedule(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list schedules: %w", err)
	}
	return list, total, nil
}

// GetSchedule reads one schedule.
func (s *Store) GetSchedule(ctx context.Context, tenantID, id uuid.UUID) (store.Schedule, error) {
	sc, err := store.ScanSchedule(s.pool.QueryRow(ctx, `SELECT `+store.ScheduleColumns+` FROM orders.recurring_donations WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("orders: get schedule %s: %w", id, err)
	}
	return sc, nil
}

// CancelSchedule cancels a schedule; a cancelled, completed one is
// returned unchanged.
func (s *Store) CancelSchedule(ctx context.Context, tenantID, id uuid.UUID, actor string) (store.Schedule, error) {
	sc, err := s.UpdateSchedule(ctx, tenantID, id, actor, func(sc store.Schedule) (store.Schedule, error) {
		return schedule.Cancel(sc), nil
	})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("orders: cancel schedule %s: %w", id, err)
	}
	return sc, nil
}
