-- +goose Up
-- The W3C traceparent of the span that wrote the delivery's audit row
-- (audit.events.trace_parent), copied at enqueue time so each attempt's
-- span joins the trace of the request that caused the event. Null when the
-- writer had no span, and for deliveries queued before this column.
ALTER TABLE webhooks.deliveries ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE webhooks.deliveries DROP COLUMN trace_parent;
