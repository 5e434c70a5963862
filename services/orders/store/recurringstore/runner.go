package recurringstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/recurring/schedule"
	"github.com/almoner/almoner/services/orders/store"
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
	Order *store.NewOrder
	// Declined is set when the processor refused the payment: the
	// installment is tried again, then the schedule turns past_due.
	Declined bool
	// PastDue is set when trying again cannot help without the donor
	// (authentication_required off-session): past_due at once.
	PastDue bool
	// Reason is the processor's code for a decline, kept on the schedule.
	Reason string
}

// InstallmentClaim is one period of a schedule claimed for a charge
// attempt: the schedule as it was claimed, the period and the attempt
// whose idempotency key the charge carries.
type InstallmentClaim struct {
	Schedule store.Schedule
	Period   time.Time
	Attempt  int32
}

// claimResult is what claimPeriod found.
type claimResult int

const (
	periodClaimed claimResult = iota // this runner charges it
	periodDone                       // charged or skipped already
	periodHeld                       // another runner is charging it
)

// ClaimInstallment claims a due schedule's next period for a charge
// attempt and commits, so the processor is called with no transaction
// open (docs/orders.md, "Charging an installment"). The schedule row is
// locked with FOR UPDATE SKIP LOCKED, so two runners never claim one
// schedule at once. A period charged or skipped already moves the
// schedule past it; one another runner is charging (its lease running) is
// left alone; one whose runner died (its lease over) is taken over with
// the same attempt, so the charge replays at the processor. ok is false
// when there is nothing to charge now.
func (s *Store) ClaimInstallment(ctx context.Context, tenantID, id uuid.UUID, today time.Time, lease time.Duration) (c InstallmentClaim, ok bool, err error) {
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if found, err := store.LockScheduleContact(ctx, tx, tenantID, id); err != nil || !found {
			return err
		}
		sc, err := store.ScanSchedule(tx.QueryRow(ctx, `SELECT `+store.ScheduleColumns+` FROM orders.recurring_donations
			WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND coalesce(retry_on, next_charge_date) <= $3
			FOR UPDATE SKIP LOCKED`, tenantID, id, today))
		if errors.Is(err, db.ErrNotFound) {
			return nil // taken by another runner, or no longer due
		}
		if err != nil {
			return fmt.Errorf("lock schedule: %w", err)
		}
		period := *sc.NextChargeDate
		attempt, got, err := claimPeriod(ctx, tx, sc, period, lease)
		switch {
		case err != nil:
			return err
		case got == periodDone:
			// An amendment moved the next charge date back onto a
			// charged or skipped period: never charge twice.
			return advance(ctx, tx, sc, period)
		case got == periodHeld:
			return nil
		}
		c, ok = InstallmentClaim{Schedule: sc, Period: period, Attempt: attempt}, true
		return nil
	})
	if err != nil {
		return InstallmentClaim{}, false, fmt.Errorf("orders: claim installment of schedule %s: %w", id, err)
	}
	return c, ok, nil
}

// claimPeriod claims period of sc for a charge attempt, or takes over the
// claim of a runner whose lease ended (keeping its attempt). Attempts are
// numbered per period over the schedule's life, so a charge after a new
// payment method is a new processor request (its idempotency key names
// the attempt).
func claimPeriod(ctx context.Context, tx pgx.Tx, sc store.Schedule, period time.Time, lease time.Duration) (int32, claimResult, error) {
	var declined int32
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM orders.recurring_installments
		WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3 AND status = 'declined'`, sc.TenantID, sc.ID, period).Scan(&declined); err != nil {
		return 0, 0, fmt.Errorf("count attempts of %s: %w", period.Format(time.DateOnly), err)
	}
	var attempt int32
	err := tx.QueryRow(ctx, `INSERT INTO orders.recurring_charges (tenant_id, schedule_id, period, state, attempt, lease_until)
		VALUES ($1, $2, $3, 'charging', $4, now() + $5 * interval '1 millisecond')
		ON CONFLICT (tenant_id, schedule_id, period) DO UPDATE SET lease_until = EXCLUDED.lease_until
			WHERE recurring_charges.state = 'charging' AND recurring_charges.lease_until < now()
		RETURNING attempt`, sc.TenantID, sc.ID, period, declined+1, lease.Milliseconds()).Scan(&attempt)
	if err == nil {
		return attempt, periodClaimed, nil
	}
	if !db.IsNoRows(err) {
		return 0, 0, fmt.Errorf("claim period %s: %w", period.Format(time.DateOnly), err)
	}
	var state string
	if err := tx.QueryRow(ctx, `SELECT state FROM orders.recurring_charges WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3`,
		sc.TenantID, sc.ID, period).Scan(&state); err != nil {
		return 0, 0, fmt.Errorf("read claim of %s: %w", period.Format(time.DateOnly), err)
	}
	if state == "charging" {
		return 0, periodHeld, nil
	}
	return 0, periodDone, nil
}

// RecordInstallment records the outcome of a claimed attempt in a second
// transaction: a decline gives the period back and counts the attempt;
// a charge records the installment order, marks the period done and moves
// the schedule past it (unless a notification moved its next charge date
// meanwhile). A claim that is no longer this attempt's (taken over and
// recorded by another runner) records nothing. It reports whether an
// order was recorded.
func (s *Store) RecordInstallment(ctx context.Context, c InstallmentClaim, today time.Time, out Outcome) (bool, error) {
	tenantID, id := c.Schedule.TenantID, c.Schedule.ID
	recorded := false
	// The installment's number is set aside before the transaction, which
	// must not ask the pool for a second connection (InsertOrder), and
	// goes back when the transaction records no order.
	number, err := s.ReserveNumber(ctx, tenantID)
	if err != nil {
		return false, fmt.Errorf("orders: record installment of schedule %s: %w", id, err)
	}
	defer number.Release()
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := store.LockScheduleContact(ctx, tx, tenantID, id); err != nil {
			return err
		}
		sc, err := lockSchedule(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		if held, err := holdsClaim(ctx, tx, c); err != nil || !held {
			return err
		}
		if out.Declined || out.PastDue {
			return decline(ctx, tx, sc, c.Period, c.Attempt, today, out)
		}
		o, err := s.InsertOrder(ctx, tx, *out.Order, number, "system")
		if err != nil {
			return fmt.Errorf("insert installment order: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE orders.recurring_charges SET order_id = $4, state = 'done', lease_until = NULL
			WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3`, tenantID, id, c.Period, o.ID); err != nil {
			return fmt.Errorf("link period to its order: %w", err)
		}
		if err := insertInstallment(ctx, tx, sc, Installment{Period: c.Period, DueDate: today, Attempt: c.Attempt, Status: InstallmentCharged, OrderID: &o.ID}); err != nil {
			return err
		}
		recorded = true
		if sc.NextChargeDate == nil || !sc.NextChargeDate.Equal(c.Period) {
			return nil
		}
		return advanceCharged(ctx, tx, sc, c.Period, o.Status == store.StatusPending)
	})
	if err != nil {
		return false, fmt.Errorf("orders: record installment of schedule %s: %w", id, err)
	}
	return recorded, nil
}

// holdsClaim locks the claim of c's period and reports whether it is
// still c's attempt in flight.
func holdsClaim(ctx context.Context, tx pgx.Tx, c InstallmentClaim) (bool, error) {
	var held bool
	err := tx.QueryRow(ctx, `SELECT state = 'charging' AND attempt = $4 FROM orders.recurring_charges
		WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3 FOR UPDATE`,
		c.Schedule.TenantID, c.Schedule.ID, c.Period, c.Attempt).Scan(&held)
	if db.IsNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock claim of %s: %w", c.Period.Format(time.DateOnly), err)
	}
	return held, nil
}

// ExpireInstallmentClaim ends the lease of a claim whose charge failed
// with its outcome unknown (the processor unreachable, its answer lost),
// so the runner's next pass tries the period again with the same attempt
// and key, which the processor replays, instead of waiting for the lease.
func (s *Store) ExpireInstallmentClaim(ctx context.Context, c InstallmentClaim) error {
	if _, err := s.pool.Exec(ctx, `UPDATE orders.recurring_charges SET lease_until = now() - interval '1 millisecond'
		WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3 AND state = 'charging' AND attempt = $4`,
		c.Schedule.TenantID, c.Schedule.ID, c.Period, c.Attempt); err != nil {
		return fmt.Errorf("orders: expire installment claim of schedule %s: %w", c.Schedule.ID, err)
	}
	return nil
}

// chargeInFlight refuses a change of a schedule whose installment is being
// charged: the outcome is recorded against the schedule as it was
// claimed, so it must not move under the charge. A claim whose runner
// died counts until the runner's next pass finishes it.
func chargeInFlight(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) error {
	var busy bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders.recurring_charges
		WHERE tenant_id = $1 AND schedule_id = $2 AND state = 'charging')`, tenantID, id).Scan(&busy); err != nil {
		return fmt.Errorf("look for a charge in flight: %w", err)
	}
	if busy {
		return store.ErrChargeInProgress
	}
	return nil
}

// decline records a declined attempt: the period's claim goes again (the
// next attempt charges it), the attempt is kept as a declined
// installment, and the schedule either waits for its next retry day (the
// tenant's retry days count from the first decline) or, when they are
// used up or no retry can help, becomes past_due.
func decline(ctx context.Context, tx pgx.Tx, sc store.Schedule, period time.Time, attempt int32, today time.Time, out Outcome) error {
	if _, err := tx.Exec(ctx, `DELETE FROM orders.recurring_charges WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3`,
		sc.TenantID, sc.ID, period); err != nil {
		return fmt.Errorf("give back period: %w", err)
	}
	if err := insertInstallment(ctx, tx, sc, Installment{Period: period, DueDate: today, Attempt: attempt, Status: InstallmentDeclined,
		DeclineReason: out.Reason}); err != nil {
		return err
	}
	return retryOrPastDue(ctx, tx, sc, sc, today, out)
}

// retryOrPastDue counts a declined attempt on next (sc as it is stored,
// changed or not) by the tenant's retry days (schedule.Decline) and
// writes it.
func retryOrPastDue(ctx context.Context, tx pgx.Tx, sc, next store.Schedule, today time.Time, out Outcome) error {
	days, err := RetryDays(ctx, tx, sc.TenantID)
	if err != nil {
		return err
	}
	if _, err := writeSchedule(ctx, tx, sc, schedule.Decline(next, days, today, out.Reason, out.PastDue), "system"); err != nil {
		return fmt.Errorf("record declined attempt: %w", err)
	}
	return nil
}

// FailInstallment counts an installment whose charge failed after it was
// recorded (a bank debit returned days later, a charge cancelled at the
// processor) as a declined attempt of its period, as a decline when it was
// charged would have: the installment becomes declined with the reason,
// the period's claim goes back, and an active schedule returns to that
// period (if it has moved past it) to be tried again on the tenant's
// retry days, or becomes past_due. A paused, cancelled or completed
// schedule keeps its state: only the installment says what happened.
func FailInstallment(ctx context.Context, tx pgx.Tx, o store.Order, reason string, today time.Time) error {
	if o.ScheduleID == nil {
		return nil
	}
	var period time.Time
	err := tx.QueryRow(ctx, `UPDATE orders.recurring_installments SET status = 'declined', decline_reason = $4
		WHERE tenant_id = $1 AND schedule_id = $2 AND order_id = $3 AND status = 'charged' RETURNING period`,
		o.TenantID, *o.ScheduleID, o.ID, reason).Scan(&period)
	if db.IsNoRows(err) {
		return nil // an installment recorded before installments were kept
	}
	if err != nil {
		return fmt.Errorf("decline failed installment: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM orders.recurring_charges WHERE tenant_id = $1 AND schedule_id = $2 AND period = $3 AND order_id = $4`,
		o.TenantID, *o.ScheduleID, period, o.ID); err != nil {
		return fmt.Errorf("give back failed period: %w", err)
	}
	sc, err := lockSchedule(ctx, tx, o.TenantID, *o.ScheduleID)
	if err != nil {
		return fmt.Errorf("failed installment: %w", err)
	}
	next, ok := schedule.Reopen(sc, period)
	if !ok {
		return nil
	}
	return retryOrPastDue(ctx, tx, sc, next, today, Outcome{Declined: true, Reason: reason})
}

// advanceCharged moves a schedule past a period just charged
// (schedule.Past: a charge still pending keeps its declines).
func advanceCharged(ctx context.Context, tx pgx.Tx, sc store.Schedule, period time.Time, pending bool) error {
	return writePast(ctx, tx, sc, schedule.Past(sc, period, pending))
}

// InstallmentSettled forgets the declines of an active schedule whose
// installment charge went through after it was recorded, unless the
// schedule is waiting for the retry of a period meanwhile.
func InstallmentSettled(ctx context.Context, tx pgx.Tx, o store.Order) error {
	if o.ScheduleID == nil {
		return nil
	}
	sc, err := lockSchedule(ctx, tx, o.TenantID, *o.ScheduleID)
	if err != nil {
		return fmt.Errorf("settled installment: %w", err)
	}
	next, ok := schedule.Settled(sc)
	if !ok {
		return nil
	}
	if _, err := writeSchedule(ctx, tx, sc, next, "system"); err != nil {
		return fmt.Errorf("forget declines of settled installment: %w", err)
	}
	return nil
}

// advance moves a schedule past period, a period charged or skipped
// already, to the next period boundary (schedule.Past).
func advance(ctx context.Context, tx pgx.Tx, sc store.Schedule, period time.Time) error {
	return writePast(ctx, tx, sc, schedule.Past(sc, period, false))
}

// writePast writes next, sc moved past a period.
func writePast(ctx context.Context, tx pgx.Tx, sc, next store.Schedule) error {
	if _, err := writeSchedule(ctx, tx, sc, next, "system"); err != nil {
		return fmt.Errorf("advance schedule: %w", err)
	}
	return nil
}
