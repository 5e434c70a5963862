-- +goose Up
-- Order numbers move from one PostgreSQL sequence per tenant
-- (orders.order_number_<tenant hex>, made at run time: 100,000 tenants
-- would be 100,000 relations in the catalog, and sequences do not move
-- with a tenant's rows) to a counter row per tenant, reserved in blocks by
-- pkg/counter (store/numbers.go). The row changes once per block, not per
-- order (why 00004 left the per-order counter row behind).
CREATE TABLE orders.counters (
    tenant_id  uuid   NOT NULL,
    name       text   NOT NULL,
    last_value bigint NOT NULL,
    PRIMARY KEY (tenant_id, name)
) WITH (fillfactor = 50);

-- Each tenant's counter continues after the largest number it may have
-- handed out: its sequence's last value (which may run ahead of the
-- orders: numbers of failed writes, and the sequence's cache; one before
-- its start when never called, as 00004 left them), its largest order
-- number, and the largest number an idempotency claim holds for a retry
-- that has not written its order yet.
INSERT INTO orders.counters (tenant_id, name, last_value)
SELECT tenant_id, 'order_number', max(n) FROM (
    SELECT substr(sequencename, length('order_number_') + 1)::uuid AS tenant_id, coalesce(last_value, start_value - 1) AS n
    FROM pg_sequences
    WHERE schemaname = 'orders' AND sequencename ~ '^order_number_[0-9a-f]{32}$'
    UNION ALL
    SELECT tenant_id, max(order_number) FROM orders.orders GROUP BY tenant_id
    UNION ALL
    SELECT tenant_id, max(order_number) FROM orders.idempotency_keys WHERE order_number IS NOT NULL GROUP BY tenant_id
) taken
GROUP BY tenant_id;

-- Orders replicas of the previous version would make a tenant's sequence
-- again and number from 1: stop them before migrating (docs/deploy.md).
-- +goose StatementBegin
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT sequencename FROM pg_sequences
             WHERE schemaname = 'orders' AND sequencename ~ '^order_number_[0-9a-f]{32}$' LOOP
        EXECUTE format('DROP SEQUENCE orders.%I', r.sequencename);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT tenant_id, last_value FROM orders.counters WHERE name = 'order_number' LOOP
        EXECUTE format('CREATE SEQUENCE IF NOT EXISTS orders.%I AS bigint MINVALUE 1 START WITH %s',
            'order_number_' || replace(r.tenant_id::text, '-', ''), r.last_value + 1);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP TABLE orders.counters;
