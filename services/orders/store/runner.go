package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// DueSchedule names a schedule that is due.
type DueSchedule struct {
	TenantID, ID uuid.UUID
}

// DueSchedules lists up to limit active schedules due on or before today.
// It takes no lock: each is then claimed by ChargeInstallment.
func (s *Store) DueSchedules(ctx context.Context, today time.Time, limit int) ([]DueSchedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, id FROM orders.recurring_donations
		WHERE status = 'active' AND coalesce(retry_on, next_charge_date) <= $1
		ORDER BY coalesce(retry_on, next_charge_date), id LIMIT $2`, today, limit)
	if err != nil {
		return nil, fmt.Errorf("orders: list due schedules: %w", err)
	}
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DueSchedule, error) {
		var d DueSchedule
		return d, r.Scan(&d.TenantID, &d.ID)
	})
	if err != nil {
		return nil, fmt.Errorf("orders: list due schedules: %w", err)
	}
	return due, nil
}

// Outcome is what a charge attempt of an installment came to.
type Outcome struct {
	// Order is the installment order to record; nil when declined.
	Order *NewOrder
	// Declined is set when the processor refused the payment: the
	// installment is tried again, then the schedule turns past_due.
	Declined bool
	// PastDue is set when trying again cannot help without the donor
	// (authentication_required off-session): past_due at once.
	PastDue bool
	// Reason is the processor's code for a decline, kept on the schedule.
	Reason string
}

// MaxAttempts is how many times a declined installment is tried (once a
// day) before the schedule becomes past_due.
const MaxAttempts = 3

// ChargeInstallment charges one due schedule exactly once per period.
// The schedule row is locked with FOR UPDATE SKIP LOCKED, so two runners
// never work on one schedule at once (the other skips it); the period's
// row in recurring_charges is unique, and the order, that row and the
// schedule's advance commit together, so a runner killed mid-way leaves
// the period uncharged, to be charged by the next run. charge builds the
// installment (calling the processor, idempotent by schedule and period)
// while the lock is held. It reports whether an order was recorded.
func (s *Store) ChargeInstallment(ctx context.Context, tenantID, id uuid.UUID, today time.Time,
	charge func(sc Schedule, period time.Time, attempt int32) (Outcome, error)) (bool, error) {
	recorded := false
	// The installment's number is set aside before the transaction, which
	// must not ask the pool for a second connection (insertOrder), and
	// goes back when the transaction records no order (the schedule taken
	// by another runner or no longer due, a decline, a failure before the
	// order's statement).
	number, err := s.reserveNumber(ctx, tenantID)
	if err != nil {
		return false, fmt.Errorf("orders: charge installment of schedule %s: %w", id, err)
	}
	defer number.Release()
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		sc, err := scanSchedule(tx.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM orders.recurring_donations
			WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND coalesce(retry_on, next_charge_date) <= $3
			FOR UPDATE SKIP LOCKED`, tenantID, id, today))
		if errors.Is(err, db.ErrNotFound) {
			return nil // taken by another runner, or no longer due
		}
		if err != nil {
			return fmt.Errorf("lock schedule: %w", err)
		}
		period := *sc.NextChargeDate
		tag, err := tx.Exec(ctx, `INSERT INTO orders.recurring_charges (tenant_id, schedule_id, period) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, tenantID, id, period)
		if err != nil {
			return fmt.Errorf("claim period %s: %w", period.Format(time.DateOnly), err)
		}
		if tag.RowsAffected() == 0 {
			// Already charged for this period (cannot happen while the
			// advance commits with the charge, but never charge twice).
			return advance(ctx, tx, sc, period)
		}
		out, err := charge(sc, period, sc.FailedAttempts+1)
		if err != nil {
			return fmt.Errorf("charge period %s: %w", period.Format(time.DateOnly), err)
		}
		tenant := tenantID.String()
		if out.Declined || out.PastDue {
			// The period's row goes again: the next attempt charges it.
			if _, err := tx.Exec(ctx, `DELETE FROM orders.recurring_charges WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3`, tenantID, id, period); err != nil {
				return fmt.Errorf("give back period: %w", err)
			}
			status, retry := ScheduleActive, any(today.AddDate(0, 0, 1))
			if out.PastDue || sc.FailedAttempts+1 >= MaxAttempts {
				status, retry = SchedulePastDue, nil
			}
			if _, err := tx.Exec(ctx, `UPDATE orders.recurring_donations SET failed_attempts = failed_attempts + 1, status = $3, retry_on = $4,
					failure_reason = $5, updated_at = now()
				WHERE tenant_id = $1 AND id = $2`, tenantID, id, status, retry, out.Reason); err != nil {
				return fmt.Errorf("record declined attempt: %w", err)
			}
			changes := map[string]audit.Change{"failedAttempts": {Old: sc.FailedAttempts, New: sc.FailedAttempts + 1}, "status": {Old: sc.Status, New: status}}
			if out.Reason != sc.FailureReason {
				changes["failureReason"] = audit.Change{Old: sc.FailureReason, New: out.Reason}
			}
			if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityRecurringDonation, EntityID: id.String(), Action: audit.Updated,
				Changes: changes, Actor: "system"}); err != nil {
				return fmt.Errorf("record audit of declined attempt: %w", err)
			}
			return nil
		}
		o, err := s.insertOrder(ctx, tx, *out.Order, number, "system")
		if err != nil {
			return fmt.Errorf("insert installment order: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE orders.recurring_charges SET order_id = $4 WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3`,
			tenantID, id, period, o.ID); err != nil {
			return fmt.Errorf("link period to its order: %w", err)
		}
		recorded = true
		return advance(ctx, tx, sc, period)
	})
	if err != nil {
		return false, fmt.Errorf("orders: charge installment of schedule %s: %w", id, err)
	}
	return recorded, nil
}

// advance moves a schedule past period: the next date counts periods from
// the start date (so Jan 31 monthly gives Feb 28, then Mar 31), and a
// schedule whose next date passes its end date is completed.
func advance(ctx context.Context, tx pgx.Tx, sc Schedule, period time.Time) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM orders.recurring_charges WHERE tenant_id = $1 AND schedule_id = $2`, sc.TenantID, sc.ID).Scan(&n); err != nil {
		return fmt.Errorf("count charged periods: %w", err)
	}
	next := NextDate(sc.StartDate, sc.Frequency, n)
	for !next.After(period) {
		n++
		next = NextDate(sc.StartDate, sc.Frequency, n)
	}
	status := ScheduleActive
	var nextArg any = next
	if sc.EndDate != nil && next.After(*sc.EndDate) {
		status, nextArg = ScheduleCompleted, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE orders.recurring_donations SET next_charge_date = $3, status = $4, failed_attempts = 0, retry_on = NULL, failure_reason = '', updated_at = now()
		WHERE tenant_id = $1 AND id = $2`, sc.TenantID, sc.ID, nextArg, status); err != nil {
		return fmt.Errorf("advance schedule: %w", err)
	}
	changes := map[string]audit.Change{"nextChargeDate": {Old: period.Format(time.DateOnly), New: nil}}
	if status == ScheduleActive {
		changes["nextChargeDate"] = audit.Change{Old: period.Format(time.DateOnly), New: next.Format(time.DateOnly)}
	} else {
		changes["status"] = audit.Change{Old: sc.Status, New: status}
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: sc.TenantID.String(), EntityType: EntityRecurringDonation, EntityID: sc.ID.String(),
		Action: audit.Updated, Changes: changes, Actor: "system"}); err != nil {
		return fmt.Errorf("record audit of advance: %w", err)
	}
	return nil
}

// NextDate is n periods of freq after start. Months clamp to the month's
// last day (Jan 31 + 1 month = Feb 28), always counted from start so the
// day does not drift.
func NextDate(start time.Time, freq string, n int) time.Time {
	switch freq {
	case "weekly":
		return start.AddDate(0, 0, 7*n)
	case "quarterly":
		return addMonths(start, 3*n)
	case "annually":
		return addMonths(start, 12*n)
	default:
		return addMonths(start, n)
	}
}

func addMonths(t time.Time, n int) time.Time {
	y, m, d := t.Date()
	first := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	return time.Date(first.Year(), first.Month(), min(d, last), 0, 0, 0, 0, time.UTC)
}
