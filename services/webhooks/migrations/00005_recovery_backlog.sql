-- +goose NO TRANSACTION
-- +goose Up
-- A tenant's replayed and redelivered deliveries still pending, which
-- replay and redeliver count under a lock before queueing more
-- (docs/webhooks.md, "Recovery"): the cap across calls. Partial, so it
-- holds only that backlog, and built CONCURRENTLY (hence no transaction)
-- so a large queue keeps taking deliveries meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_recovery_pending ON webhooks.deliveries (tenant_id, endpoint_id)
    WHERE state = 'pending' AND kind <> 'event';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhooks.deliveries_recovery_pending;
