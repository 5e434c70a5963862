package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

// Schedule statuses.
const (
	ScheduleActive    = "active"
	SchedulePaused    = "paused"
	ScheduleCancelled = "cancelled"
	ScheduleCompleted = "completed"
	SchedulePastDue   = "past_due"
)

// Schedule is a recurring donation schedule.
type Schedule struct {
	TenantID       uuid.UUID
	ID             uuid.UUID
	ContactID      int64
	AmountMinor    int64
	Currency       string
	Frequency      string
	StartDate      time.Time
	EndDate        *time.Time
	FundID         uuid.UUID
	CampaignID     string
	PaymentMethod  string
	PaymentToken   string
	Status         string
	NextChargeDate *time.Time
	FailedAttempts int32
	// FailureReason is the processor's code for the last failed
	// installment (authentication_required, card_declined, …).
	FailureReason string
	OriginOrderID uuid.UUID
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// AnchorDate is the date periods count from once an amendment moved
	// it; nil means StartDate (see Anchor).
	AnchorDate *time.Time
	// PausedUntil is the day a paused schedule resumes by itself.
	PausedUntil *time.Time
	// RetryOn is when a declined installment is tried again.
	RetryOn *time.Time
	// FirstDeclinedOn is the day the current installment was first
	// declined: its retries count from it.
	FirstDeclinedOn *time.Time
}

// Anchor is the date the schedule's periods count from.
func (s Schedule) Anchor() time.Time {
	if s.AnchorDate != nil {
		return *s.AnchorDate
	}
	return s.StartDate
}

const scheduleColumns = `tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, end_date, fund_id, campaign_id,
	payment_method, payment_token, status, next_charge_date, failed_attempts, failure_reason, origin_order_id, created_at, updated_at,
	anchor_date, paused_until, retry_on, first_declined_on`

func scanSchedule(row pgx.Row) (Schedule, error) {
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

// ListSchedules returns a page of schedules, newest first.
func (s *Store) ListSchedules(ctx context.Context, tenantID uuid.UUID, contactID *int64, status string, limit int32, offset int64) ([]Schedule, int64, error) {
	var total int64
	const where = ` WHERE tenant_id = $1 AND ($2::bigint IS NULL OR contact_id = $2) AND ($3 = '' OR status = $3)`
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM orders.recurring_donations`+where, tenantID, contactID, status).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("orders: count schedules: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+scheduleColumns+` FROM orders.recurring_donations`+where+` ORDER BY id DESC LIMIT $4 OFFSET $5`,
		tenantID, contactID, status, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list schedules: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Schedule, error) { return scanSchedule(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("orders: list schedules: %w", err)
	}
	return list, total, nil
}

// GetSchedule reads one schedule.
func (s *Store) GetSchedule(ctx context.Context, tenantID, id uuid.UUID) (Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM orders.recurring_donations WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	if err != nil {
		return Schedule{}, fmt.Errorf("orders: get schedule %s: %w", id, err)
	}
	return sc, nil
}

// CancelSchedule cancels a schedule; a cancelled, completed one is
// returned unchanged.
func (s *Store) CancelSchedule(ctx context.Context, tenantID, id uuid.UUID, actor string) (Schedule, error) {
	sc, err := s.UpdateSchedule(ctx, tenantID, id, actor, func(sc Schedule) (Schedule, error) {
		if sc.Status == ScheduleCancelled || sc.Status == ScheduleCompleted {
			return sc, nil
		}
		sc.Status, sc.NextChargeDate, sc.PausedUntil, sc.RetryOn = ScheduleCancelled, nil, nil, nil
		return sc, nil
	})
	if err != nil {
		return Schedule{}, fmt.Errorf("orders: cancel schedule %s: %w", id, err)
	}
	return sc, nil
}

// Frequencies are the frequencies a schedule may have.
var Frequencies = []string{"weekly", "monthly", "quarterly", "annually"}
