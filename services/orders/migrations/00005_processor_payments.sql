-- +goose Up
-- Payments collected through a tenant's own processor account (Stripe).
--
-- An order whose charge has not settled (a bank debit that clears days
-- later, a card waiting for 3-D Secure) is recorded Pending; a processor
-- notification makes it Completed or Failed. Pending and Failed orders
-- count nowhere: every figure reads only Completed and PartiallyRefunded.
ALTER TABLE orders.orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders.orders ADD CONSTRAINT orders_status_check
    CHECK (status IN ('Pending', 'Completed', 'PartiallyRefunded', 'Refunded', 'Voided', 'Failed'));

ALTER TABLE orders.order_payments DROP CONSTRAINT order_payments_status_check;
ALTER TABLE orders.order_payments ADD CONSTRAINT order_payments_status_check
    CHECK (status IN ('Pending', 'RequiresAction', 'Authorized', 'Captured', 'Refunded', 'PartiallyRefunded',
                      'Voided', 'Declined', 'Failed', 'Disputed'));
-- processor names who collected the payment: '' (not collected by us:
-- cash, check, external), 'test' (the sandbox's test processor) or
-- 'stripe'. A refund or void goes back to the same one.
ALTER TABLE orders.order_payments ADD COLUMN processor text NOT NULL DEFAULT '';
UPDATE orders.order_payments SET processor = 'test' WHERE processor_reference LIKE 'test_ch_%';
-- Notifications name the processor's charge; they find the payment here.
CREATE INDEX order_payments_processor_reference ON orders.order_payments (tenant_id, processor_reference)
    WHERE processor_reference <> '';

-- Refunds made at the processor (its dashboard) are recorded too; source
-- tells them apart from refunds made through the API.
ALTER TABLE orders.refunds ADD COLUMN source text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'processor'));
ALTER TABLE orders.refunds ADD COLUMN payment_id uuid;

-- Each processor event is applied once: its id is recorded in the same
-- transaction as its effect, so a redelivered event changes nothing.
CREATE TABLE orders.processor_events (
    tenant_id   uuid        NOT NULL,
    provider    text        NOT NULL,
    event_id    text        NOT NULL,
    event_type  text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, provider, event_id)
);

-- One processor customer per contact and processor mode (test and live
-- are separate universes at Stripe); saved methods hang off it.
CREATE TABLE orders.processor_customers (
    tenant_id   uuid        NOT NULL,
    contact_id  bigint      NOT NULL,
    provider    text        NOT NULL,
    mode        text        NOT NULL CHECK (mode IN ('test', 'live')),
    customer_id text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, contact_id, provider, mode)
);

-- Saved payment methods: what the API lists without asking the processor.
-- id is the processor's own (pm_…), which the donation form already knows.
-- A detached method keeps its row (detached_at) for the history of the
-- schedules that used it; nothing is ever deleted.
CREATE TABLE orders.payment_methods (
    tenant_id   uuid        NOT NULL,
    id          text        NOT NULL,
    contact_id  bigint      NOT NULL,
    provider    text        NOT NULL,
    mode        text        NOT NULL CHECK (mode IN ('test', 'live')),
    customer_id text        NOT NULL,
    type        text        NOT NULL CHECK (type IN ('card', 'us_bank_account')),
    brand       text        NOT NULL DEFAULT '',
    last4       text        NOT NULL DEFAULT '',
    exp_month   integer     NOT NULL DEFAULT 0,
    exp_year    integer     NOT NULL DEFAULT 0,
    is_default  boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    detached_at timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX payment_methods_contact ON orders.payment_methods (tenant_id, contact_id, created_at) WHERE detached_at IS NULL;

-- An order charged at a processor names its number in the charge. A
-- keyed request keeps the number with its claim, so its retry (same key,
-- same order id) sends the very same charge again: the processor answers
-- a repeated idempotency key only when the parameters are the same.
ALTER TABLE orders.idempotency_keys ADD COLUMN order_number bigint;

-- Why a schedule stopped collecting (authentication_required, the last
-- decline's code); empty while it collects.
ALTER TABLE orders.recurring_donations ADD COLUMN failure_reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE orders.idempotency_keys DROP COLUMN order_number;
ALTER TABLE orders.recurring_donations DROP COLUMN failure_reason;
DROP TABLE orders.payment_methods;
DROP TABLE orders.processor_customers;
DROP TABLE orders.processor_events;
ALTER TABLE orders.refunds DROP COLUMN payment_id;
ALTER TABLE orders.refunds DROP COLUMN source;
DROP INDEX orders.order_payments_processor_reference;
ALTER TABLE orders.order_payments DROP COLUMN processor;
