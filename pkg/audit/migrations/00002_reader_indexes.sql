-- +goose NO TRANSACTION
-- +goose Up
-- Per-tenant readers (the webhook dispatcher asks for "events of tenant T
-- after cursor C") walk this index in the reader's (xid, id) order instead
-- of filtering the whole log. CONCURRENTLY keeps writers running while a
-- large log is indexed, which is why this file runs outside a transaction.
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_tenant_xid_id ON audit.events (tenant_id, xid, id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS audit.events_tenant_xid_id;
