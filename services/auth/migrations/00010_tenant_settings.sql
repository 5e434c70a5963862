-- +goose Up
-- The tenant's settings document (docs/operators.md, "Tenant settings"):
-- one owner, the auth service, so a PUT is one transaction with one audit
-- row. defaultCurrency stays in auth.tenants.default_currency (it travels
-- with every principal); the others live here. A tenant without a row has
-- the defaults below.
CREATE TABLE auth.tenant_settings (
    tenant_id                uuid        PRIMARY KEY REFERENCES auth.tenants (id),
    fiscal_year_start_month  integer     NOT NULL DEFAULT 1 CHECK (fiscal_year_start_month BETWEEN 1 AND 12),
    time_zone                text        NOT NULL DEFAULT 'America/New_York',
    recurring_retry_days     integer[]   NOT NULL DEFAULT '{1,3,7}',
    daily_batch_close_time   text        NOT NULL DEFAULT '00:00' CHECK (daily_batch_close_time ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
    -- In minor units of the tenant's default currency.
    receipt_threshold_minor  bigint      NOT NULL DEFAULT 0 CHECK (receipt_threshold_minor >= 0),
    updated_at               timestamptz
);

-- Existing values move here once, so every tenant keeps its own: the
-- retry days the admin command set (orders.recurring_settings) and the
-- organization profile's time zone (reports.organization_profiles), which
-- statements used. Those tables exist in a database upgraded from an
-- earlier release (auth migrates first in one process, and `almoner
-- migrate` runs before the new binaries start); in a new database they do
-- not, and there is nothing to move. Nothing in auth reads them after this.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('orders.recurring_settings') IS NOT NULL THEN
        INSERT INTO auth.tenant_settings (tenant_id, recurring_retry_days)
        SELECT r.tenant_id, r.retry_days
        FROM orders.recurring_settings r
        JOIN auth.tenants t ON t.id = r.tenant_id
        ON CONFLICT (tenant_id) DO UPDATE SET recurring_retry_days = excluded.recurring_retry_days;
    END IF;
    IF to_regclass('reports.organization_profiles') IS NOT NULL THEN
        INSERT INTO auth.tenant_settings (tenant_id, time_zone)
        SELECT p.tenant_id, p.time_zone
        FROM reports.organization_profiles p
        JOIN auth.tenants t ON t.id = p.tenant_id
        WHERE p.time_zone <> ''
        ON CONFLICT (tenant_id) DO UPDATE SET time_zone = excluded.time_zone;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE auth.tenant_settings;
