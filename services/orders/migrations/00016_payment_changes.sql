-- +goose Up
-- A refund or void is made in three steps, none holding a transaction
-- across the processor's calls (docs/payments.md, "Refunds and voids"):
-- the change is claimed here with its plan (each payment's call and its
-- idempotency key) and a lease, and committed; the processor is called;
-- the outcome is recorded in a second transaction that deletes the claim.
-- A claim's amounts count as refunded while it is in flight, so changes
-- made at once never give back more than was paid. One left by a process
-- that died or lost the processor's answer is finished by the sweeper,
-- which calls again with the same keys (the processor replays what it
-- did) and records the outcome.
CREATE TABLE orders.payment_changes (
    tenant_id   uuid        NOT NULL,
    id          uuid        NOT NULL,
    order_id    uuid        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('refund', 'void')),
    takes       jsonb       NOT NULL,
    reason      text        NOT NULL DEFAULT '',
    actor       text        NOT NULL,
    lease_until timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, order_id) REFERENCES orders.orders (tenant_id, id)
);
CREATE INDEX payment_changes_order ON orders.payment_changes (tenant_id, order_id);
CREATE INDEX payment_changes_lease ON orders.payment_changes (lease_until);

-- +goose Down
DROP TABLE orders.payment_changes;
