-- +goose Up
-- The import list (GET …/imports) reads a tenant's imports newest first by
-- (created_at, id) and continues a page token by keyset, (created_at, id)
-- below the last one served: a backward range scan of this index, however
-- deep the page. created_at and id are set once an upload is queued, so
-- the runners' frequent writes (counts, checkpoint, lease) stay HOT
-- updates. A plain CREATE INDEX: the table holds one row per import.
CREATE INDEX imports_tenant_created ON imports.imports (tenant_id, created_at, id);

-- +goose Down
DROP INDEX imports.imports_tenant_created;
