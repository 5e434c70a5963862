-- +goose Up
-- The platform's operations log (docs/operators.md): endpoints switched
-- off after repeated failures, as the owner publishes them (the auth
-- service, which serves the log, reads no table of another service).
-- Columns: id, tenant_id, kind, status, started_at, finished_at, detail.
CREATE VIEW webhooks.operations_v1 AS
SELECT id::text AS id, tenant_id, 'webhook_auto_disable'::text AS kind, 'disabled'::text AS status,
       updated_at AS started_at, updated_at AS finished_at, disabled_reason AS detail
FROM webhooks.endpoints
WHERE disabled_reason IS NOT NULL AND NOT active;

-- +goose Down
DROP VIEW webhooks.operations_v1;
