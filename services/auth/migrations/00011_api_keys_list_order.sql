-- +goose Up
-- The key list reads a tenant's live keys newest first, ties broken by id
-- (ORDER BY created_at DESC, id DESC). The index ended at created_at, so
-- every list sorted its rows after the scan; ending it in id DESC gives
-- the rows in the list's order (docs/performance.md, "What is left").
-- auth.api_keys holds a few rows per tenant: the rebuild is short, and in
-- the migration's transaction.
CREATE INDEX api_keys_tenant_created_id ON auth.api_keys (tenant_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
DROP INDEX auth.api_keys_tenant_created;

-- +goose Down
CREATE INDEX api_keys_tenant_created ON auth.api_keys (tenant_id, created_at DESC) WHERE deleted_at IS NULL;
DROP INDEX auth.api_keys_tenant_created_id;
