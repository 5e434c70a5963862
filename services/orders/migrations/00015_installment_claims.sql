-- +goose Up
-- A recurring installment is charged in three steps, none of which holds
-- a transaction across the call to the processor (docs/orders.md,
-- "Charging an installment"): the runner claims the period ('charging',
-- with the attempt whose idempotency key the charge carries and a lease),
-- commits, calls the processor, then records the outcome in a second
-- transaction ('done' with its order, or the claim deleted for a
-- decline). A claim whose runner died is taken over once its lease ends
-- and charged again with the same key, which the processor replays.
-- Claims made before (every row here: charged or skipped periods) are
-- 'done'.
ALTER TABLE orders.recurring_charges
    ADD COLUMN state text NOT NULL DEFAULT 'done' CHECK (state IN ('charging', 'done')),
    ADD COLUMN attempt integer,
    ADD COLUMN lease_until timestamptz,
    ADD CONSTRAINT recurring_charges_charging_check CHECK (state = 'done' OR (attempt IS NOT NULL AND lease_until IS NOT NULL));

-- Schedule changes look for a charge in flight on their schedule.
CREATE INDEX recurring_charges_charging ON orders.recurring_charges (tenant_id, schedule_id) WHERE state = 'charging';

-- +goose Down
DROP INDEX orders.recurring_charges_charging;
DELETE FROM orders.recurring_charges WHERE state = 'charging';
ALTER TABLE orders.recurring_charges DROP CONSTRAINT recurring_charges_charging_check,
    DROP COLUMN lease_until, DROP COLUMN attempt, DROP COLUMN state;
