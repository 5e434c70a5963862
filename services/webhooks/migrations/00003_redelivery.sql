-- +goose NO TRANSACTION
-- +goose Up
-- Redelivery and replay (docs/webhooks.md, "Recovery") queue an event
-- again for an endpoint as a new delivery, so (endpoint, event) is unique
-- only among first deliveries, the ones the dispatcher queues from the
-- endpoint's cursor: that key still makes its enqueue idempotent. kind
-- says which a delivery is; redelivery_of names the delivery a redelivery
-- sends again.
ALTER TABLE webhooks.deliveries
    ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'event' CHECK (kind IN ('event', 'redelivery', 'replay')),
    ADD COLUMN IF NOT EXISTS redelivery_of uuid;

-- Built CONCURRENTLY (hence no transaction) so a large queue keeps taking
-- deliveries meanwhile; the old constraint goes only once it exists.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS deliveries_first ON webhooks.deliveries (endpoint_id, event_id) WHERE kind = 'event';
ALTER TABLE webhooks.deliveries DROP CONSTRAINT IF EXISTS deliveries_endpoint_id_event_id_key;

-- A delivery's attempts, for its detail.
CREATE INDEX CONCURRENTLY IF NOT EXISTS attempts_delivery ON webhooks.attempts (tenant_id, delivery_id) WHERE delivery_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhooks.attempts_delivery;
ALTER TABLE webhooks.deliveries ADD CONSTRAINT deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id);
DROP INDEX CONCURRENTLY IF EXISTS webhooks.deliveries_first;
ALTER TABLE webhooks.deliveries DROP COLUMN redelivery_of, DROP COLUMN kind;
