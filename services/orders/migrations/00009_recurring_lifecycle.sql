-- +goose Up
-- The recurring-gift lifecycle (docs/orders.md, "Schedule states"): a
-- schedule can be amended, paused (until a day, or until resumed),
-- resumed, and have an installment skipped; declines are retried on each
-- tenant's schedule of days.
ALTER TABLE orders.recurring_donations DROP CONSTRAINT recurring_donations_status_check;
ALTER TABLE orders.recurring_donations ADD CONSTRAINT recurring_donations_status_check
    CHECK (status IN ('active', 'paused', 'past_due', 'cancelled', 'completed'));
-- anchor_date is the date periods count from once an amendment of the
-- frequency or the next charge date moved it; NULL means the start date.
-- Counting from one date keeps the day from drifting (Jan 31 monthly: Feb
-- 28, then Mar 31), whatever was charged, skipped or missed in between.
ALTER TABLE orders.recurring_donations ADD COLUMN anchor_date date;
-- paused_until is the day a paused schedule resumes by itself (NULL:
-- paused until resumed).
ALTER TABLE orders.recurring_donations ADD COLUMN paused_until date;
-- first_declined_on is the day the current installment was first
-- declined; its retries are counted in days from it.
ALTER TABLE orders.recurring_donations ADD COLUMN first_declined_on date;
-- The runner's scan for schedules to resume.
CREATE INDEX recurring_donations_resume ON orders.recurring_donations (paused_until) WHERE status = 'paused';

-- Every installment and charge attempt of a schedule, for
-- GET …/installments: charged (order_id set), declined (decline_reason),
-- skipped. recurring_charges stays the one claim per schedule and period
-- (a skip claims its period too, so it is never charged).
CREATE TABLE orders.recurring_installments (
    tenant_id      uuid        NOT NULL,
    id             uuid        NOT NULL,
    schedule_id    uuid        NOT NULL,
    period         date        NOT NULL,
    due_date       date        NOT NULL,
    attempt        integer     NOT NULL,
    status         text        NOT NULL CHECK (status IN ('charged', 'declined', 'skipped')),
    amount_minor   bigint      NOT NULL,
    currency       text        NOT NULL,
    order_id       uuid,
    decline_reason text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, schedule_id) REFERENCES orders.recurring_donations (tenant_id, id)
);
CREATE INDEX recurring_installments_schedule ON orders.recurring_installments (tenant_id, schedule_id, created_at DESC, id DESC);
-- Installments charged before this migration (their declines were not
-- kept: only the attempt that charged is known, its number not).
INSERT INTO orders.recurring_installments (tenant_id, id, schedule_id, period, due_date, attempt, status, amount_minor, currency, order_id, created_at)
SELECT c.tenant_id, gen_random_uuid(), c.schedule_id, c.period, (c.created_at AT TIME ZONE 'UTC')::date, 1, 'charged',
       o.total_minor, o.currency, c.order_id, c.created_at
FROM orders.recurring_charges c
JOIN orders.orders o ON o.tenant_id = c.tenant_id AND o.id = c.order_id;

-- Each tenant's retry schedule: the days after an installment's first
-- decline on which it is tried again. A tenant without a row has the
-- default, 1, 3 and 7 days (store.DefaultRetryDays).
CREATE TABLE orders.recurring_settings (
    tenant_id  uuid        PRIMARY KEY,
    retry_days integer[]   NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE orders.recurring_settings;
DROP TABLE orders.recurring_installments;
DROP INDEX orders.recurring_donations_resume;
ALTER TABLE orders.recurring_donations DROP COLUMN first_declined_on;
ALTER TABLE orders.recurring_donations DROP COLUMN paused_until;
ALTER TABLE orders.recurring_donations DROP COLUMN anchor_date;
UPDATE orders.recurring_donations SET status = 'active' WHERE status = 'paused';
ALTER TABLE orders.recurring_donations DROP CONSTRAINT recurring_donations_status_check;
ALTER TABLE orders.recurring_donations ADD CONSTRAINT recurring_donations_status_check
    CHECK (status IN ('active', 'cancelled', 'completed', 'past_due'));
