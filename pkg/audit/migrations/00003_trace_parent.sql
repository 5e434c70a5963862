-- +goose Up
-- The W3C traceparent of the request (or background job) that wrote the
-- row, so work an event causes later — a webhook delivery — joins the trace
-- of the change that caused it. NULL when the writer had no sampled span.
ALTER TABLE audit.events ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE audit.events DROP COLUMN trace_parent;
