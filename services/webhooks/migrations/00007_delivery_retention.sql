-- +goose NO TRANSACTION
-- +goose Up
-- Finished deliveries and their attempts are deleted after
-- ALMONER_WEBHOOK_DELIVERY_RETENTION (docs/webhooks.md, "Retention"), and
-- test sends' attempts with them. These indexes let the dispatcher's
-- hourly pass find the oldest of each without reading the tables; built
-- CONCURRENTLY (hence no transaction) so a large queue keeps taking
-- deliveries meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_finished ON webhooks.deliveries (enqueued_at) WHERE state <> 'pending';
CREATE INDEX CONCURRENTLY IF NOT EXISTS attempts_tests ON webhooks.attempts (attempted_at) WHERE delivery_id IS NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhooks.attempts_tests;
DROP INDEX CONCURRENTLY IF EXISTS webhooks.deliveries_finished;
