-- +goose Up
-- The sweeper of abandoned keyed-order claims (docs/payments.md) marks a
-- claim 'sweeping' while it gives back the claim's charges: from then on a
-- client's retry with the key is told the order is in progress (409)
-- instead of taking the claim over and replaying charges being refunded,
-- until the sweeper releases the key.
ALTER TABLE orders.idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE orders.idempotency_keys ADD CONSTRAINT idempotency_keys_state_check
    CHECK (state IN ('pending', 'sweeping', 'completed'));

-- The sweep looks for open claims by lease; completed records (two days
-- of orders) stay out of its index.
CREATE INDEX idempotency_keys_open_lease ON orders.idempotency_keys (lease_until) WHERE state <> 'completed';

-- +goose Down
DROP INDEX orders.idempotency_keys_open_lease;
UPDATE orders.idempotency_keys SET state = 'pending' WHERE state = 'sweeping';
ALTER TABLE orders.idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE orders.idempotency_keys ADD CONSTRAINT idempotency_keys_state_check
    CHECK (state IN ('pending', 'completed'));
