-- +goose Up
-- Housekeeping (docs/auth.md, "Retention"): rows that can no longer be
-- used are deleted a day after they stop working, and the security log
-- after ALMONER_SECURITY_LOG_RETENTION. These indexes let each pass find
-- the oldest rows without reading the tables.
CREATE INDEX sessions_finished ON auth.sessions (coalesce(ended_at, expires_at));
CREATE INDEX security_log_created ON auth.security_log (created_at);

-- +goose Down
DROP INDEX auth.security_log_created;
DROP INDEX auth.sessions_finished;
