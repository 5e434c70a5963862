-- +goose Up
-- Fixed-window rate-limit counters, shared by every replica: one row per
-- policy, key (a client IP, a user id) and window. A request increments its
-- row with INSERT ... ON CONFLICT DO UPDATE, so concurrent replicas count
-- into the same row.
--
-- The table is not tenant-owned (its keys are network addresses), so it has
-- no tenant_id. It is UNLOGGED: counters are worth nothing after a crash or
-- a failover, and skipping the WAL keeps the hot increment cheap.
CREATE UNLOGGED TABLE ratelimit.counters (
    policy       text        NOT NULL,
    key          text        NOT NULL,
    window_start timestamptz NOT NULL,
    count        integer     NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (policy, key, window_start)
);

CREATE INDEX counters_expires_at ON ratelimit.counters (expires_at);

-- +goose Down
DROP TABLE ratelimit.counters;
