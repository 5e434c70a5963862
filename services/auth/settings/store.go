package settings

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/services/auth/store"
)

// ErrCurrencyLocked is returned when a PUT changes the currency of a
// tenant that has an order.
var ErrCurrencyLocked = errors.New("default currency locked: the tenant has orders")

// Store reads and writes auth.tenant_settings and the tenant's currency.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// The tenant's currency with its settings row, the defaults where it has
// none.
const selectSettings = `
	SELECT t.default_currency, COALESCE(s.fiscal_year_start_month, $2), COALESCE(s.time_zone, $3),
		COALESCE(s.recurring_retry_days, $4), COALESCE(s.daily_batch_close_time, $5), COALESCE(s.receipt_threshold_minor, 0), s.updated_at
	FROM auth.tenants t LEFT JOIN auth.tenant_settings s ON s.tenant_id = t.id
	WHERE t.id = $1`

func readSettings(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenant uuid.UUID, lock bool) (Settings, error) {
	sql := selectSettings
	if lock {
		// The tenant's row serializes the PUTs of one tenant (and its
		// other changes, which take the same lock).
		sql += ` FOR UPDATE OF t`
	}
	var s Settings
	err := q.QueryRow(ctx, sql, tenant, DefaultFiscalYearStartMonth, DefaultTimeZone, DefaultRetryDays(), DefaultDailyBatchCloseTime).
		Scan(&s.DefaultCurrency, &s.FiscalYearStartMonth, &s.TimeZone, &s.RecurringRetryDays, &s.DailyBatchCloseTime, &s.ReceiptThresholdMinor, &s.UpdatedAt)
	if err != nil {
		return s, fmt.Errorf("read tenant settings: %w", db.Interpret(err))
	}
	return s, nil
}

// Get reads the tenant's settings; db.ErrNotFound for no such tenant.
func (s *Store) Get(ctx context.Context, tenant uuid.UUID) (Settings, error) {
	out, err := readSettings(ctx, s.pool, tenant, false)
	if err != nil {
		return out, fmt.Errorf("auth: get settings of tenant %s: %w", tenant, err)
	}
	return out, nil
}

// Update applies p to the tenant's settings under the tenant's row lock
// and, when anything changed, writes them with one TenantSettings Updated
// audit row naming the changed properties, all in one transaction. A
// change of the currency moves the validation epoch (the principal carries
// it) and is refused with ErrCurrencyLocked once the tenant has an order.
// It reports whether the currency changed.
func (s *Store) Update(ctx context.Context, tenant uuid.UUID, p Patch, actor string) (Settings, bool, error) {
	var out Settings
	currencyMoved := false
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := readSettings(ctx, tx, tenant, true)
		if err != nil {
			return err
		}
		next, err := Apply(cur, p)
		if err != nil {
			return err
		}
		changes := Changes(cur, next)
		if changes == nil {
			// A PUT that changes nothing writes nothing.
			out = cur
			return nil
		}
		if next.DefaultCurrency != cur.DefaultCurrency {
			if err := changeCurrency(ctx, tx, tenant, next.DefaultCurrency); err != nil {
				return err
			}
			currencyMoved = true
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO auth.tenant_settings (tenant_id, fiscal_year_start_month, time_zone, recurring_retry_days, daily_batch_close_time,
				receipt_threshold_minor, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, now())
			ON CONFLICT (tenant_id) DO UPDATE SET fiscal_year_start_month = $2, time_zone = $3, recurring_retry_days = $4,
				daily_batch_close_time = $5, receipt_threshold_minor = $6, updated_at = now()
			RETURNING updated_at`, tenant, next.FiscalYearStartMonth, next.TimeZone, next.RecurringRetryDays, next.DailyBatchCloseTime,
			next.ReceiptThresholdMinor).Scan(&next.UpdatedAt); err != nil {
			return fmt.Errorf("write settings: %w", err)
		}
		out = next
		if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant.String(), EntityType: "TenantSettings", EntityID: tenant.String(),
			Action: audit.Updated, Changes: changes, Actor: actor}); err != nil {
			return fmt.Errorf("record audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return out, false, fmt.Errorf("auth: update settings of tenant %s: %w", tenant, err)
	}
	return out, currencyMoved, nil
}

// changeCurrency sets the tenant's currency, unless it has an order:
// orders are read through the view orders publishes for readers outside
// it (orders.report_orders_v1), as the operations log reads
// operations_v1; before orders is migrated there are none. An order
// committed while this transaction runs is not seen (a window of one
// statement; the order carries its own currency).
func changeCurrency(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, currency string) error {
	var hasOrders bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('orders.report_orders_v1') IS NOT NULL`).Scan(&hasOrders); err != nil {
		return fmt.Errorf("look for the orders view: %w", err)
	}
	if hasOrders {
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders.report_orders_v1 WHERE tenant_id = $1)`, tenant).Scan(&hasOrders); err != nil {
			return fmt.Errorf("look for orders: %w", err)
		}
	}
	if hasOrders {
		return ErrCurrencyLocked
	}
	if _, err := tx.Exec(ctx, `UPDATE auth.tenants SET default_currency = $2, updated_at = now() WHERE id = $1`, tenant, currency); err != nil {
		return fmt.Errorf("change currency: %w", err)
	}
	return store.BumpEpoch(ctx, tx)
}
