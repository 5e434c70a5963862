-- +goose Up
-- Amounts are integer minor units of the item's currency; the checks keep
-- the rules the API validates true in the table too, so no code path (a
-- stock movement racing an edit, a future migration) can break them.
CREATE TABLE inventory.items (
    tenant_id               uuid        NOT NULL,
    id                      uuid        NOT NULL,
    sku                     text        NOT NULL,
    name                    text        NOT NULL,
    description             text        NOT NULL DEFAULT '',
    price_minor             bigint      NOT NULL CHECK (price_minor >= 0),
    currency                text        NOT NULL,
    fair_market_value_minor bigint      NOT NULL CHECK (fair_market_value_minor >= 0),
    track_stock             boolean     NOT NULL DEFAULT false,
    stock_on_hand           integer     NOT NULL DEFAULT 0,
    active                  boolean     NOT NULL DEFAULT true,
    category                text        NOT NULL DEFAULT '',
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT items_fair_market_value_le_price CHECK (fair_market_value_minor <= price_minor),
    -- The last line of defence of the reservation code: stock never goes
    -- below zero, whatever races.
    CONSTRAINT items_stock_on_hand_nonnegative CHECK (stock_on_hand >= 0)
);

-- SKUs are unique per tenant regardless of letter case, so "TOTE-1" and
-- "tote-1" cannot name two different items.
CREATE UNIQUE INDEX items_tenant_sku_key ON inventory.items (tenant_id, lower(sku));
-- The list's sort order.
CREATE INDEX items_tenant_name ON inventory.items (tenant_id, lower(name), id);

-- One row per reserved order line, keyed by the order and its line number:
-- the key that makes ReserveStock and ReleaseStock idempotent. The item's
-- pricing is copied at reservation time so that a replay answers exactly
-- what the first call did.
CREATE TABLE inventory.reservations (
    tenant_id               uuid        NOT NULL,
    order_id                uuid        NOT NULL,
    line_number             integer     NOT NULL CHECK (line_number > 0),
    item_id                 uuid        NOT NULL,
    quantity                integer     NOT NULL CHECK (quantity > 0),
    state                   text        NOT NULL CHECK (state IN ('reserved', 'released')),
    -- stock_moved records whether the reservation took units (the item
    -- tracked stock then), so a release gives back exactly what was taken.
    stock_moved             boolean     NOT NULL,
    sku                     text        NOT NULL,
    name                    text        NOT NULL,
    unit_price_minor        bigint      NOT NULL,
    fair_market_value_minor bigint      NOT NULL,
    currency                text        NOT NULL,
    reserved_at             timestamptz NOT NULL DEFAULT now(),
    released_at             timestamptz,
    PRIMARY KEY (tenant_id, order_id, line_number),
    FOREIGN KEY (tenant_id, item_id) REFERENCES inventory.items (tenant_id, id)
);

CREATE INDEX reservations_tenant_item ON inventory.reservations (tenant_id, item_id);

-- +goose Down
DROP TABLE inventory.reservations;
DROP TABLE inventory.items;
