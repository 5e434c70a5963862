-- +goose Up
-- Order numbers move from the order_counters row (one row version per
-- order, which long snapshots anywhere on the server kept from being
-- pruned) to one sequence per tenant, orders.order_number_<tenant hex>
-- (store/numbers.go). Each tenant's sequence continues after its last
-- number. Orders replicas of the previous version take numbers from the
-- table this drops: stop them before migrating (docs/orders.md).
-- +goose StatementBegin
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT tenant_id, last_number FROM orders.order_counters LOOP
        EXECUTE format('CREATE SEQUENCE IF NOT EXISTS orders.%I AS bigint MINVALUE 1 START WITH %s',
            'order_number_' || replace(r.tenant_id::text, '-', ''), r.last_number + 1);
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP TABLE orders.order_counters;

-- +goose Down
CREATE TABLE orders.order_counters (
    tenant_id   uuid   NOT NULL PRIMARY KEY,
    last_number bigint NOT NULL
);
