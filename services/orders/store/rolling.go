package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// AdvanceGivingWindows moves every tenant's rolling giving window
// (orders.giving_rolling, migration 00024) forward to its target at now,
// one tenant per transaction, and returns how many moved. A move waits
// for the tenant's gifts being committed and subtracts the gifts that
// left the window; it is due once a day, at UTC midnight.
func (s *Store) AdvanceGivingWindows(ctx context.Context, now time.Time) (int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id FROM orders.giving_rolling
		WHERE from_at < orders.rolling_target($1) ORDER BY tenant_id`, now)
	due, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return 0, fmt.Errorf("orders: rolling windows due: %w", err)
	}
	moved := 0
	for _, tenant := range due {
		var ok bool
		if err := s.pool.QueryRow(ctx, `SELECT orders.advance_giving_rolling($1, orders.rolling_target($2))`, tenant, now).Scan(&ok); err != nil {
			return moved, fmt.Errorf("orders: move the rolling window of %s: %w", tenant, err)
		}
		if ok {
			moved++
		}
	}
	return moved, nil
}
