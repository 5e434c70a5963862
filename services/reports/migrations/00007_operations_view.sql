-- +goose Up
-- The platform's operations log (docs/operators.md): year-end runs and
-- letter runs, as the owner publishes them (the auth service, which
-- serves the log, reads no table of another service). Columns: id,
-- tenant_id, kind, status, started_at, finished_at, detail.
CREATE VIEW reports.operations_v1 AS
SELECT id::text AS id, tenant_id, 'tax_statement_run'::text AS kind, status, created_at AS started_at, finished_at,
       'year ' || year AS detail
FROM reports.tax_statement_runs
UNION ALL
SELECT id::text, tenant_id, 'letter_run', status, created_at, finished_at,
       channel || ', ' || letters || ' letters'
FROM reports.letter_runs;

-- +goose Down
DROP VIEW reports.operations_v1;
