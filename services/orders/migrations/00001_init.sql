-- +goose Up
-- Amounts are integer minor units of the row's currency. Nothing here is
-- ever deleted: voids and refunds change states and amounts.

CREATE TABLE orders.funds (
    tenant_id              uuid        NOT NULL,
    id                     uuid        NOT NULL,
    name                   text        NOT NULL,
    description            text        NOT NULL DEFAULT '',
    is_tax_deductible      boolean     NOT NULL DEFAULT true,
    -- Hundredths of a percent: 290 is 2.90 %.
    processing_fee_bp      integer     NOT NULL DEFAULT 0 CHECK (processing_fee_bp BETWEEN 0 AND 10000),
    is_active              boolean     NOT NULL DEFAULT true,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX funds_tenant_name_key ON orders.funds (tenant_id, lower(name));

-- A batch groups orders for accounting. The daily batch (is_daily) is
-- opened automatically by the first order of its day; the partial unique
-- index makes that race-free.
CREATE TABLE orders.batches (
    tenant_id   uuid        NOT NULL,
    id          uuid        NOT NULL,
    name        text        NOT NULL,
    batch_date  date,
    is_daily    boolean     NOT NULL DEFAULT false,
    state       text        NOT NULL DEFAULT 'Open' CHECK (state IN ('Open', 'Closed')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    closed_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX batches_daily_key ON orders.batches (tenant_id, batch_date) WHERE is_daily;

-- One counter row per tenant: order numbers are sequential per tenant and
-- the row is bumped in the order's own transaction (a rolled-back order
-- leaves no gap).
CREATE TABLE orders.order_counters (
    tenant_id   uuid   NOT NULL PRIMARY KEY,
    last_number bigint NOT NULL
);

CREATE TABLE orders.orders (
    tenant_id               uuid        NOT NULL,
    id                      uuid        NOT NULL,
    order_number            bigint      NOT NULL,
    contact_id              bigint      NOT NULL,
    status                  text        NOT NULL CHECK (status IN ('Completed', 'PartiallyRefunded', 'Refunded', 'Voided')),
    currency                text        NOT NULL,
    donation_subtotal_minor bigint      NOT NULL,
    item_subtotal_minor     bigint      NOT NULL,
    total_minor             bigint      NOT NULL,
    deductible_minor        bigint      NOT NULL,
    refunded_minor          bigint      NOT NULL DEFAULT 0,
    has_donations           boolean     NOT NULL,
    has_items               boolean     NOT NULL,
    batch_id                uuid        NOT NULL,
    schedule_id             uuid,
    schedule_ids            uuid[]      NOT NULL DEFAULT '{}',
    billing_address         jsonb,
    shipping_address        jsonb,
    notes                   text        NOT NULL DEFAULT '',
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK (refunded_minor BETWEEN 0 AND total_minor),
    FOREIGN KEY (tenant_id, batch_id) REFERENCES orders.batches (tenant_id, id)
);
CREATE UNIQUE INDEX orders_tenant_number_key ON orders.orders (tenant_id, order_number);
-- UUIDv7 ids are time-ordered: (tenant_id, id DESC) is the list's newest-
-- first order and its keyset cursor.
CREATE INDEX orders_tenant_contact ON orders.orders (tenant_id, contact_id, id DESC);
CREATE INDEX orders_tenant_batch ON orders.orders (tenant_id, batch_id);
CREATE INDEX orders_tenant_schedule ON orders.orders (tenant_id, schedule_id) WHERE schedule_id IS NOT NULL;

CREATE TABLE orders.order_donations (
    tenant_id          uuid    NOT NULL,
    order_id           uuid    NOT NULL,
    id                 uuid    NOT NULL,
    position           integer NOT NULL,
    fund_id            uuid    NOT NULL,
    fund_name          text    NOT NULL,
    amount_minor       bigint  NOT NULL CHECK (amount_minor > 0),
    is_tax_deductible  boolean NOT NULL,
    campaign_id        text    NOT NULL DEFAULT '',
    appeal_id          text    NOT NULL DEFAULT '',
    tribute            jsonb,
    PRIMARY KEY (tenant_id, order_id, id),
    -- Deferred: the order row is written last in its transaction, right
    -- after its number is taken, to hold the counter row briefly.
    FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id) DEFERRABLE INITIALLY DEFERRED,
    FOREIGN KEY (tenant_id, fund_id) REFERENCES orders.funds (tenant_id, id)
);
CREATE INDEX order_donations_fund ON orders.order_donations (tenant_id, fund_id);
CREATE INDEX order_donations_campaign ON orders.order_donations (tenant_id, campaign_id) WHERE campaign_id <> '';

CREATE TABLE orders.order_items (
    tenant_id               uuid    NOT NULL,
    order_id                uuid    NOT NULL,
    line_number             integer NOT NULL,
    item_id                 uuid    NOT NULL,
    sku                     text    NOT NULL,
    name                    text    NOT NULL,
    quantity                integer NOT NULL CHECK (quantity > 0),
    unit_price_minor        bigint  NOT NULL,
    fair_market_value_minor bigint  NOT NULL,
    PRIMARY KEY (tenant_id, order_id, line_number),
    FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE orders.order_payments (
    tenant_id           uuid    NOT NULL,
    order_id            uuid    NOT NULL,
    id                  uuid    NOT NULL,
    position            integer NOT NULL,
    method              text    NOT NULL CHECK (method IN ('Cash', 'Check', 'Card', 'Ach', 'External')),
    amount_minor        bigint  NOT NULL CHECK (amount_minor > 0),
    refunded_minor      bigint  NOT NULL DEFAULT 0,
    status              text    NOT NULL CHECK (status IN ('Authorized', 'Captured', 'Refunded', 'PartiallyRefunded', 'Voided', 'Declined')),
    check_number        text    NOT NULL DEFAULT '',
    reference           text    NOT NULL DEFAULT '',
    processor_reference text    NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, order_id, id),
    CHECK (refunded_minor BETWEEN 0 AND amount_minor),
    FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE orders.refunds (
    tenant_id    uuid        NOT NULL,
    order_id     uuid        NOT NULL,
    id           uuid        NOT NULL,
    amount_minor bigint      NOT NULL CHECK (amount_minor > 0),
    reason       text        NOT NULL DEFAULT '',
    actor        text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, order_id, id),
    FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id)
);

-- Idempotency records: a request claims its key (state pending, with a
-- lease) before any side effect, and the order and the completed record
-- commit in one transaction. request_hash is SHA-256 of the canonical
-- request, so the same key with another body is told apart.
CREATE TABLE orders.idempotency_keys (
    tenant_id     uuid        NOT NULL,
    key           text        NOT NULL,
    request_hash  bytea       NOT NULL,
    order_id      uuid        NOT NULL,
    state         text        NOT NULL CHECK (state IN ('pending', 'completed')),
    lease_until   timestamptz NOT NULL,
    response      bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_created ON orders.idempotency_keys (created_at);

CREATE TABLE orders.recurring_donations (
    tenant_id        uuid        NOT NULL,
    id               uuid        NOT NULL,
    contact_id       bigint      NOT NULL,
    amount_minor     bigint      NOT NULL CHECK (amount_minor > 0),
    currency         text        NOT NULL,
    frequency        text        NOT NULL CHECK (frequency IN ('weekly', 'monthly', 'quarterly', 'annually')),
    start_date       date        NOT NULL,
    end_date         date,
    fund_id          uuid        NOT NULL,
    campaign_id      text        NOT NULL DEFAULT '',
    payment_method   text        NOT NULL,
    payment_token    text        NOT NULL DEFAULT '',
    status           text        NOT NULL CHECK (status IN ('active', 'cancelled', 'completed', 'past_due')),
    next_charge_date date,
    failed_attempts  integer     NOT NULL DEFAULT 0,
    -- retry_on is when a declined installment is tried again.
    retry_on         date,
    origin_order_id  uuid        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, fund_id) REFERENCES orders.funds (tenant_id, id)
);
CREATE INDEX recurring_donations_contact ON orders.recurring_donations (tenant_id, contact_id, id DESC);
-- The runner's scan: due schedules across tenants.
CREATE INDEX recurring_donations_due ON orders.recurring_donations ((coalesce(retry_on, next_charge_date))) WHERE status = 'active';

-- One row per schedule and period: the constraint that makes installments
-- exactly-once whatever runners race or crash.
CREATE TABLE orders.recurring_charges (
    tenant_id   uuid        NOT NULL,
    schedule_id uuid        NOT NULL,
    period      date        NOT NULL,
    order_id    uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, schedule_id, period)
);

-- +goose Down
DROP TABLE orders.recurring_charges;
DROP TABLE orders.recurring_donations;
DROP TABLE orders.idempotency_keys;
DROP TABLE orders.refunds;
DROP TABLE orders.order_payments;
DROP TABLE orders.order_items;
DROP TABLE orders.order_donations;
DROP TABLE orders.orders;
DROP TABLE orders.order_counters;
DROP TABLE orders.batches;
DROP TABLE orders.funds;
