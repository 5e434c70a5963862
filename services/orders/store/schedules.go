package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Schedule statuses.
const (
	ScheduleActive    = "active"
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
}

const scheduleColumns = `tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, end_date, fund_id, campaign_id,
	payment_method, payment_token, status, next_charge_date, failed_attempts, failure_reason, origin_order_id, created_at, updated_at`

func scanSchedule(row pgx.Row) (Schedule, error) {
	var s Schedule
	err := row.Scan(&s.TenantID, &s.ID, &s.ContactID, &s.AmountMinor, &s.Currency, &s.Frequency, &s.StartDate, &s.EndDate, &s.FundID, &s.CampaignID,
		&s.PaymentMethod, &s.PaymentToken, &s.Status, &s.NextChargeDate, &s.FailedAttempts, &s.FailureReason, &s.OriginOrderID, &s.CreatedAt, &s.UpdatedAt)
	if err != nil {
		return Schedule{}, fmt.Errorf("read schedule: %w", db.Interpret(err))
	}
	return s, nil
}

func queueInsertSchedule(b *pgx.Batch, s Schedule) {
	b.Queue(`INSERT INTO orders.recurring_donations (tenant_id, id, contact_id, amount_minor, currency, frequency, start_date, end_date, fund_id,
			campaign_id, payment_method, payment_token, status, next_charge_date, origin_order_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
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
	var out Schedule
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		sc, err := scanSchedule(tx.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM orders.recurring_donations WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return fmt.Errorf("lock schedule: %w", err)
		}
		if sc.Status == ScheduleCancelled || sc.Status == ScheduleCompleted {
			out = sc
			return nil
		}
		out, err = scanSchedule(tx.QueryRow(ctx, `UPDATE orders.recurring_donations SET status = 'cancelled', next_charge_date = NULL, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING `+scheduleColumns, tenantID, id))
		if err != nil {
			return fmt.Errorf("update schedule row: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID.String(), EntityType: EntityRecurringDonation, EntityID: id.String(), Action: audit.Updated,
			Changes: map[string]audit.Change{"status": {Old: sc.Status, New: ScheduleCancelled}}, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return Schedule{}, fmt.Errorf("orders: cancel schedule %s: %w", id, err)
	}
	return out, nil
}
