-- +goose Up
-- An endpoint whose delivery attempts have all failed for 5 days is
-- switched off by the dispatcher (docs/webhooks.md, "Auto-disable").
-- disabled_reason says so (null for an endpoint switched off by a PUT);
-- active_since is when the endpoint was last switched on, so failures from
-- before a re-enable do not count against it again.
ALTER TABLE webhooks.endpoints
    ADD COLUMN disabled_reason text,
    ADD COLUMN active_since timestamptz NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE webhooks.endpoints DROP COLUMN active_since, DROP COLUMN disabled_reason;
