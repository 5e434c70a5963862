-- +goose Up
-- Shipments (issue 33, docs/fulfillment.md): the fulfillment room of the
-- inventory service. A shipment's change and its stock movement are one
-- transaction of this schema. The first shipment of an order has the
-- order's id; a split makes new ids.
ALTER TABLE inventory.items ADD COLUMN location text NOT NULL DEFAULT '';

CREATE TABLE inventory.shipments (
    tenant_id        uuid        NOT NULL,
    id               uuid        NOT NULL,
    order_id         uuid        NOT NULL,
    order_number     bigint      NOT NULL,
    order_date       timestamptz NOT NULL,
    contact_id       bigint      NOT NULL,
    batch_id         uuid,
    status           text        NOT NULL CHECK (status IN ('pending', 'packed', 'shipped', 'delivered', 'cancelled', 'returned')),
    shipping_address jsonb       NOT NULL,
    carrier          text        NOT NULL DEFAULT '',
    tracking_number  text        NOT NULL DEFAULT '',
    tracking_url     text        NOT NULL DEFAULT '',
    -- The body of the last transition, so that its repeat is recognised.
    reason           text        NOT NULL DEFAULT '',
    restocked        boolean     NOT NULL DEFAULT false,
    packed_at        timestamptz,
    shipped_at       timestamptz,
    delivered_at     timestamptz,
    cancelled_at     timestamptz,
    returned_at      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX shipments_tenant_order ON inventory.shipments (tenant_id, order_id);
CREATE INDEX shipments_tenant_status ON inventory.shipments (tenant_id, status, order_number, id);
CREATE INDEX shipments_tenant_created ON inventory.shipments (tenant_id, created_at, id);

-- stock_moved: whether the line's units were taken from stock when the
-- order reserved them (the item tracked stock then); cancel and restock
-- give back only what was taken.
CREATE TABLE inventory.shipment_lines (
    tenant_id   uuid    NOT NULL,
    shipment_id uuid    NOT NULL,
    line_number integer NOT NULL CHECK (line_number > 0),
    item_id     uuid    NOT NULL,
    sku         text    NOT NULL,
    name        text    NOT NULL,
    quantity    integer NOT NULL CHECK (quantity > 0),
    stock_moved boolean NOT NULL,
    PRIMARY KEY (tenant_id, shipment_id, line_number),
    FOREIGN KEY (tenant_id, shipment_id) REFERENCES inventory.shipments (tenant_id, id),
    FOREIGN KEY (tenant_id, item_id) REFERENCES inventory.items (tenant_id, id)
);

-- +goose Down
DROP TABLE inventory.shipment_lines;
DROP TABLE inventory.shipments;
ALTER TABLE inventory.items DROP COLUMN location;
