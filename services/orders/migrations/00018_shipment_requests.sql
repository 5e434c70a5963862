-- +goose Up
-- The outbox of shipments (issue 33, docs/architecture.md "Where shipments
-- live"): an item order with a shipping address writes its row in the
-- order's own transaction; after the commit checkout hands it to the
-- inventory service, which creates the shipment (idempotent by order id),
-- and deletes the row. A row left by a process that died or a failed
-- handoff is delivered by the next sweep. The shipment is built from the
-- order as it reads at delivery, so the row carries only its key.
CREATE TABLE orders.shipment_requests (
    tenant_id  uuid        NOT NULL,
    order_id   uuid        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, order_id),
    FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id)
);
CREATE INDEX shipment_requests_created ON orders.shipment_requests (created_at);

-- +goose Down
DROP TABLE orders.shipment_requests;
