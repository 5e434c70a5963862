-- +goose Up
-- The platform's operations log (docs/operators.md) reads each kind of
-- background work from a view its owner publishes, as reports reads the
-- report_*_v1 views: the auth service, which serves the log, reads no
-- table of another service. Columns: id, tenant_id, kind, status,
-- started_at, finished_at, detail.
CREATE VIEW imports.operations_v1 AS
SELECT id::text AS id, tenant_id, 'import'::text AS kind, status, created_at AS started_at, finished_at,
       kind || ' ' || format AS detail
FROM imports.imports;

-- +goose Down
DROP VIEW imports.operations_v1;
