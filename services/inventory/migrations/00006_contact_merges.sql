-- +goose Up
-- Which contacts a merge folded into which (docs/merge.md, "Concurrency"):
-- MoveContactShipments records the duplicate's survivor here in the
-- transaction that moves its shipments, and re-points the rows of
-- contacts merged into the duplicate earlier (one hop, as the contacts
-- service keeps merged_into). A shipment created afterwards for the
-- duplicate (checkout hands an order's shipment over just after the order
-- commits, with the contact it was recorded for) is created for the
-- survivor. Both take a lock per contact (store.LockContact), so a
-- creation either lands before the move, which then moves it, or after,
-- and reads the row.
CREATE TABLE inventory.contact_merges (
    tenant_id    uuid        NOT NULL,
    duplicate_id bigint      NOT NULL,
    survivor_id  bigint      NOT NULL,
    merged_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, duplicate_id)
);
CREATE INDEX contact_merges_survivor ON inventory.contact_merges (tenant_id, survivor_id);

-- +goose Down
DROP TABLE inventory.contact_merges;
