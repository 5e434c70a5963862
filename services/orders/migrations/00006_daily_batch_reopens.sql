-- +goose Up
-- Staff close the daily batch to reconcile; orders that come later that
-- day open a new daily batch instead of failing until midnight UTC. So at
-- most one daily batch per tenant and day is open, and a day may have
-- several closed ones.
DROP INDEX orders.batches_daily_key;
CREATE UNIQUE INDEX batches_daily_open_key ON orders.batches (tenant_id, batch_date) WHERE is_daily AND state = 'Open';

-- +goose Down
DROP INDEX orders.batches_daily_open_key;
CREATE UNIQUE INDEX batches_daily_key ON orders.batches (tenant_id, batch_date) WHERE is_daily;
