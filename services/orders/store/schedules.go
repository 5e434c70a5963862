package store

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/orders/recurring/schedule"
)

// Schedule is a recurring donation schedule (package schedule holds it
// and its rules); an order may create schedules, so the row is read and
// inserted here, and the recurring store changes it.
type Schedule = schedule.Schedule

// Schedule statuses.
const (
	ScheduleActive    = schedule.Active
	SchedulePaused    = schedule.Paused
	ScheduleCancelled = schedule.Cancelled
	ScheduleCompleted = schedule.Completed
	SchedulePastDue   = schedule.PastDue
)

// ScheduleColumns are the columns ScanSchedule reads.
const ScheduleColumns = `tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, end_date, fund_id, campaign_id,
	payment_method, payment_token, status, next_charge_date, failed_attempts, failure_reason, origin_order_id, created_at, updated_at,
	anchor_date, paused_until, retry_on, first_declined_on`

// ScanSchedule reads a row of ScheduleColumns.
func ScanSchedule(row pgx.Row) (Schedule, error) {
	var s Schedule
	err := row.Scan(&s.TenantID, &s.ID, &s.ContactID, &s.AmountMinor, &s.Currency, &s.Frequency, &s.StartDate, &s.EndDate, &s.FundID, &s.CampaignID,
		&s.PaymentMethod, &s.PaymentToken, &s.Status, &s.NextChargeDate, &s.FailedAttempts, &s.FailureReason, &s.OriginOrderID, &s.CreatedAt, &s.UpdatedAt,
		&s.AnchorDate, &s.PausedUntil, &s.RetryOn, &s.FirstDeclinedOn)
	if err != nil {
		return Schedule{}, fmt.Errorf("read schedule: %w", db.Interpret(err))
	}
	return s, nil
}

func queueInsertSchedule(b *pgx.Batch, s Schedule) {
	b.Queue(`INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, end_date, fund_id,
			campaign_id, payment_method, payment_token, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, `+contactForWrite("$1", "$3")+`, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		s.TenantID, s.ID, s.ContactID, s.AmountMinor, s.Currency, s.Frequency, s.StartDate, s.EndDate, s.FundID,
		s.CampaignID, s.PaymentMethod, s.PaymentToken, s.Status, s.NextChargeDate, s.OriginOrderID)
}
