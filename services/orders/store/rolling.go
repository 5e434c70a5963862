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

// GivingCalendar is a tenant's calendar copy (orders.giving_rolling,
// migration 00027): the zone and fiscal year start its period rows are
// kept in; Zone is empty before the first copy.
type GivingCalendar struct {
	Tenant          uuid.UUID
	Zone            string
	FiscalYearStart int
}

// GivingCalendarsDue are up to limit tenants with giving rows whose
// calendar copy was last checked before checkedBefore (or never), the
// never-checked first, leaving out those whose period rows a bulk import
// suspended until after now.
func (s *Store) GivingCalendarsDue(ctx context.Context, checkedBefore, now time.Time, limit int) ([]GivingCalendar, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id, coalesce(time_zone, ''), coalesce(fiscal_year_start, 0)
		FROM orders.giving_rolling WHERE (calendar_checked_at IS NULL OR calendar_checked_at < $1)
		  AND (periods_resume_at IS NULL OR periods_resume_at <= $3)
		ORDER BY calendar_checked_at NULLS FIRST, tenant_id LIMIT $2`, checkedBefore, limit, now)
	due, err := pgx.CollectRows(rows, pgx.RowToStructByPos[GivingCalendar])
	if err != nil {
		return nil, fmt.Errorf("orders: giving calendars due: %w", err)
	}
	return due, nil
}

// CheckedGivingCalendar records that the tenant's copy was checked at
// at, without the tenant's giving lock: nothing is rebuilt.
func (s *Store) CheckedGivingCalendar(ctx context.Context, tenant uuid.UUID, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE orders.giving_rolling SET calendar_checked_at = $2 WHERE tenant_id = $1`, tenant, at); err != nil {
		return fmt.Errorf("orders: giving calendar of %s checked: %w", tenant, err)
	}
	return nil
}

// StartGivingCalendar moves the tenant's calendar copy to c, checked at
// at: when it changed, it drops the copy and starts a build of the period
// rows (orders 00029), which BuildGivingPeriods carries out in steps. It
// reports whether it started one (not when the copy is c or a build of c
// runs).
func (s *Store) StartGivingCalendar(ctx context.Context, c GivingCalendar, at time.Time) (bool, error) {
	var started bool
	if err := s.pool.QueryRow(ctx, `SELECT orders.start_giving_calendar($1, $2, $3::smallint, $4)`,
		c.Tenant, c.Zone, c.FiscalYearStart, at).Scan(&started); err != nil {
		return false, fmt.Errorf("orders: start the giving calendar of %s: %w", c.Tenant, err)
	}
	return started, nil
}

// GivingPeriodBuilds are the tenants whose period rows are being built.
func (s *Store) GivingPeriodBuilds(ctx context.Context) ([]uuid.UUID, error) {
	rows, _ := s.pool.Query(ctx, `SELECT tenant_id FROM orders.giving_rolling WHERE periods_zone IS NOT NULL ORDER BY tenant_id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("orders: giving period builds: %w", err)
	}
	return ids, nil
}

// BuildGivingPeriods runs one step of the tenant's build, the period rows
// of its next contacts (up to contacts of them), in its own transaction,
// and reports whether the build is done.
func (s *Store) BuildGivingPeriods(ctx context.Context, tenant uuid.UUID, contacts int) (bool, error) {
	var done bool
	if err := s.pool.QueryRow(ctx, `SELECT orders.build_giving_periods($1, $2)`, tenant, contacts).Scan(&done); err != nil {
		return false, fmt.Errorf("orders: build the giving periods of %s: %w", tenant, err)
	}
	return done, nil
}

// CompactGivingTallies folds the new rows of every tenant's giving
// tallies (migration 00028) into one row per key, in one transaction, and
// returns how many it folded. Readers sum both kinds of row: compaction
// keeps what they read small, not right.
func (s *Store) CompactGivingTallies(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT orders.compact_giving_tallies()`).Scan(&n); err != nil {
		return 0, fmt.Errorf("orders: compact the giving tallies: %w", err)
	}
	return n, nil
}
