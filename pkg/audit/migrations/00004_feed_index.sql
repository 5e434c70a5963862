-- +goose NO TRANSACTION
-- +goose Up
-- The tenant event feed starts a reader without a cursor at the first
-- event within retention (services/webhooks, docs/events.md): this index
-- finds that event's time in one probe instead of a walk over the tenant's
-- whole history. CONCURRENTLY keeps writers running while a large log is
-- indexed, which is why this file runs outside a transaction.
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_tenant_occurred ON audit.events (tenant_id, occurred_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS audit.events_tenant_occurred;
