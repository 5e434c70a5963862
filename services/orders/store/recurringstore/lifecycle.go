package recurringstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/services/orders/recurring/schedule"
	"github.com/almoner/almoner/services/orders/store"
)

// Installment statuses (GET …/installments). pending is not stored: it
// is a charged installment whose order has not settled yet.
const (
	InstallmentCharged  = "charged"
	InstallmentPending  = "pending"
	InstallmentDeclined = "declined"
	InstallmentSkipped  = "skipped"
)

// UpdateSchedule changes one schedule under its row lock: change gets the
// schedule as locked and returns it as it should be (or an error, which
// changes nothing). The changed columns are written with one audit row
// listing them (recurring_donation.updated); nothing changed, nothing is
// written.
func (s *Store) UpdateSchedule(ctx context.Context, tenantID, id uuid.UUID, actor string, change func(store.Schedule) (store.Schedule, error)) (store.Schedule, error) {
	var out store.Schedule
	err := s.changeSchedule(ctx, tenantID, id, func(tx pgx.Tx, old store.Schedule) error {
		next, err := change(old)
		if err != nil {
			return err
		}
		out, err = writeSchedule(ctx, tx, old, next, actor)
		return err
	})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("orders: update schedule %s: %w", id, err)
	}
	return out, nil
}

// SkipInstallment skips an active schedule's next installment: its period
// is claimed (so no runner ever charges it) and recorded as a skipped
// installment, and the next charge date moves one period. check refuses
// a schedule that cannot skip (not active). A period that is claimed
// already (skipped or charged) is not skipped again: the schedule comes
// back unchanged.
func (s *Store) SkipInstallment(ctx context.Context, tenantID, id uuid.UUID, today time.Time, actor string, check func(store.Schedule) error) (store.Schedule, error) {
	var out store.Schedule
	err := s.changeSchedule(ctx, tenantID, id, func(tx pgx.Tx, old store.Schedule) error {
		if err := check(old); err != nil {
			return err
		}
		period := *old.NextChargeDate
		tag, err := tx.Exec(ctx, `INSERT INTO orders.recurring_charges (tenant_id, schedule_id, period) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, tenantID, id, period)
		if err != nil {
			return fmt.Errorf("claim period %s: %w", period.Format(time.DateOnly), err)
		}
		if tag.RowsAffected() == 0 {
			// Skipped or charged already (an amendment moved the next
			// charge date back onto it): a period has one outcome, so
			// the repeat records nothing and changes nothing; the runner
			// passes over the claimed period.
			out = old
			return nil
		}
		if err := insertInstallment(ctx, tx, old, Installment{Period: period, DueDate: today, Status: InstallmentSkipped}); err != nil {
			return err
		}
		out, err = writeSchedule(ctx, tx, old, schedule.Past(old, period, false), actor)
		return err
	})
	if err != nil {
		return store.Schedule{}, fmt.Errorf("orders: skip installment of schedule %s: %w", id, err)
	}
	return out, nil
}

// ResumeDue resumes, on today, up to limit paused schedules whose
// pausedUntil has come, and reports how many. Each is claimed with FOR
// UPDATE SKIP LOCKED, so several runners share the work.
func (s *Store) ResumeDue(ctx context.Context, today time.Time, limit int) (int, error) {
	n := 0
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+store.ScheduleColumns+` FROM orders.recurring_donations
			WHERE status = 'paused' AND paused_until <= $1 ORDER BY paused_until, id LIMIT $2 FOR UPDATE SKIP LOCKED`, today, limit)
		if err != nil {
			return fmt.Errorf("lock schedules to resume: %w", err)
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Schedule, error) { return store.ScanSchedule(r) })
		if err != nil {
			return fmt.Errorf("lock schedules to resume: %w", err)
		}
		for _, old := range due {
			next := old
			next.Resume(today)
			if _, err := writeSchedule(ctx, tx, old, next, "system"); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("orders: resume paused schedules: %w", err)
	}
	return n, nil
}

func lockSchedule(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (store.Schedule, error) {
	sc, err := store.ScanSchedule(tx.QueryRow(ctx, `SELECT `+store.ScheduleColumns+` FROM orders.recurring_donations WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("lock schedule: %w", err)
	}
	return sc, nil
}

// writeSchedule stores next over old (same tenant and id) with one audit
// row naming the changed properties, by their API names.
func writeSchedule(ctx context.Context, tx pgx.Tx, old, next store.Schedule, actor string) (store.Schedule, error) {
	changes := scheduleChanges(old, next)
	if len(changes) == 0 {
		return old, nil
	}
	out, err := store.ScanSchedule(tx.QueryRow(ctx, `UPDATE orders.recurring_donations SET amount_minor = $3, frequency = $4, end_date = $5, fund_id = $6,
			campaign_id = $7, payment_method = $8, payment_token = $9, status = $10, next_charge_date = $11, failed_attempts = $12,
			failure_reason = $13, anchor_date = $14, paused_until = $15, retry_on = $16, first_declined_on = $17, updated_at = now()
		WHERE tenant_id = $1 AND id = $2 RETURNING `+store.ScheduleColumns,
		old.TenantID, old.ID, next.AmountMinor, next.Frequency, next.EndDate, next.FundID, next.CampaignID, next.PaymentMethod, next.PaymentToken,
		next.Status, next.NextChargeDate, next.FailedAttempts, next.FailureReason, next.AnchorDate, next.PausedUntil, next.RetryOn, next.FirstDeclinedOn))
	if err != nil {
		return store.Schedule{}, fmt.Errorf("update schedule row: %w", err)
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: old.TenantID.String(), EntityType: store.EntityRecurringDonation, EntityID: old.ID.String(),
		Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
		return store.Schedule{}, fmt.Errorf("record audit: %w", err)
	}
	return out, nil
}

// scheduleChanges lists what differs between two versions of a schedule,
// keyed by the API's property names, valued as the API shows them.
func scheduleChanges(a, b store.Schedule) map[string]audit.Change {
	ch := map[string]audit.Change{}
	add := func(name string, x, y any) {
		if x != y {
			ch[name] = audit.Change{Old: x, New: y}
		}
	}
	add("amount", money.FormatMinor(a.AmountMinor, a.Currency), money.FormatMinor(b.AmountMinor, b.Currency))
	add("frequency", a.Frequency, b.Frequency)
	add("endDate", dateValue(a.EndDate), dateValue(b.EndDate))
	add("fundId", a.FundID.String(), b.FundID.String())
	add("campaignId", a.CampaignID, b.CampaignID)
	add("paymentMethod", a.PaymentMethod, b.PaymentMethod)
	add("paymentMethodId", a.PaymentToken, b.PaymentToken)
	add("status", a.Status, b.Status)
	add("nextChargeDate", dateValue(a.NextChargeDate), dateValue(b.NextChargeDate))
	add("failedAttempts", a.FailedAttempts, b.FailedAttempts)
	add("failureReason", a.FailureReason, b.FailureReason)
	add("pausedUntil", dateValue(a.PausedUntil), dateValue(b.PausedUntil))
	add("retryOn", dateValue(a.RetryOn), dateValue(b.RetryOn))
	// The anchor is how later dates are computed, not a property of the
	// API; a change of it shows as nextChargeDate or frequency. The day of
	// the first decline likewise shows as failedAttempts.
	return ch
}

// dateValue is a date as the API writes it, or nil.
func dateValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format(time.DateOnly)
}

// Installment is one installment of a schedule, or one attempt at it.
type Installment struct {
	ID            uuid.UUID
	ScheduleID    uuid.UUID
	Period        time.Time
	DueDate       time.Time
	Attempt       int32
	Status        string
	AmountMinor   int64
	Currency      string
	OrderID       *uuid.UUID
	DeclineReason string
	CreatedAt     time.Time
}

// insertInstallment records one installment or attempt of sc (its amount
// and currency are the schedule's).
func insertInstallment(ctx context.Context, tx pgx.Tx, sc store.Schedule, in Installment) error {
	if _, err := tx.Exec(ctx, `INSERT INTO orders.recurring_installments (tenant_id, id, schedule_id, period, due_date, attempt, status,
			amount_minor, currency, order_id, decline_reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		sc.TenantID, uuid.Must(uuid.NewV7()), sc.ID, in.Period, in.DueDate, in.Attempt, in.Status, sc.AmountMinor, sc.Currency,
		in.OrderID, in.DeclineReason); err != nil {
		return fmt.Errorf("record %s installment of %s: %w", in.Status, in.Period.Format(time.DateOnly), err)
	}
	return nil
}

// ListInstallments returns a page of a schedule's installments and
// attempts, newest first, and their count. A charged installment whose
// order is still Pending at the processor shows as pending, one whose
// order then Failed as declined.
func (s *Store) ListInstallments(ctx context.Context, tenantID, scheduleID uuid.UUID, limit int32, offset int64) ([]Installment, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders.recurring_installments WHERE tenant_id = $1 AND schedule_id = $2`,
		tenantID, scheduleID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("orders: count installments of schedule %s: %w", scheduleID, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT i.id, i.schedule_id, i.period, i.due_date, i.attempt,
			CASE WHEN o.status = 'Pending' THEN 'pending' WHEN o.status = 'Failed' THEN 'declined' ELSE i.status END,
			i.amount_minor, i.currency, i.order_id, i.decline_reason, i.created_at
		FROM orders.recurring_installments i
		LEFT JOIN orders.orders o ON o.tenant_id = i.tenant_id AND o.id = i.order_id
		WHERE i.tenant_id = $1 AND i.schedule_id = $2
		ORDER BY i.created_at DESC, i.id DESC LIMIT $3 OFFSET $4`, tenantID, scheduleID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list installments of schedule %s: %w", scheduleID, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Installment, error) {
		var in Installment
		return in, r.Scan(&in.ID, &in.ScheduleID, &in.Period, &in.DueDate, &in.Attempt, &in.Status, &in.AmountMinor, &in.Currency,
			&in.OrderID, &in.DeclineReason, &in.CreatedAt)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list installments of schedule %s: %w", scheduleID, err)
	}
	return list, total, nil
}

// RetryDays returns the tenant's retry schedule (schedule.DefaultRetryDays
// when it set none).
func RetryDays(ctx context.Context, q store.Querier, tenantID uuid.UUID) ([]int32, error) {
	var days []int32
	err := q.QueryRow(ctx, `SELECT retry_days FROM orders.recurring_settings WHERE tenant_id = $1`, tenantID).Scan(&days)
	if errors.Is(err, pgx.ErrNoRows) {
		return schedule.DefaultRetryDays, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read retry days: %w", err)
	}
	return days, nil
}

// SetRetryDays stores the tenant's retry schedule.
func (s *Store) SetRetryDays(ctx context.Context, tenantID uuid.UUID, days []int32) ([]int32, error) {
	var out []int32
	if err := s.pool.QueryRow(ctx, `INSERT INTO orders.recurring_settings (tenant_id, retry_days) VALUES ($1, $2)
		ON CONFLICT (tenant_id) DO UPDATE SET retry_days = excluded.retry_days, updated_at = now()
		RETURNING retry_days`, tenantID, days).Scan(&out); err != nil {
		return nil, fmt.Errorf("orders: set retry days of tenant %s: %w", tenantID, err)
	}
	return out, nil
}

// changeSchedule runs change on the schedule locked for a change in one
// transaction, once no installment of it is in flight (afterCharge).
func (s *Store) changeSchedule(ctx context.Context, tenantID, id uuid.UUID, change func(tx pgx.Tx, old store.Schedule) error) error {
	return afterCharge(ctx, func() error {
		return db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
			old, err := lockSchedule(ctx, tx, tenantID, id)
			if err != nil {
				return err
			}
			if err := chargeInFlight(ctx, tx, tenantID, id); err != nil {
				return err
			}
			return change(tx, old)
		})
	})
}

// chargeWait is how long a schedule change waits for an installment in
// flight (its processor call, a few hundred milliseconds) to be recorded
// before it is refused with ErrChargeInProgress: the change then sees the
// charged period, as when it waited on the schedule's row lock.
const chargeWait = 10 * time.Second

// afterCharge runs change, again while it finds an installment of its
// schedule in flight, for up to chargeWait; no lock is held between tries.
// A try cut short because the caller's context ended, after an earlier
// try found a charge in flight, answers that: the change was refused for
// the charge, whichever moment the context ended in.
func afterCharge(ctx context.Context, change func() error) error {
	deadline := time.Now().Add(chargeWait)
	inFlight := false
	for pause := 20 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		err := change()
		if inFlight && ctx.Err() != nil && !errors.Is(err, store.ErrChargeInProgress) {
			return fmt.Errorf("%w (the wait ended: %w)", store.ErrChargeInProgress, ctx.Err())
		}
		if !errors.Is(err, store.ErrChargeInProgress) || time.Now().After(deadline) {
			return err
		}
		inFlight = true
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}
