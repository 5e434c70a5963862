-- The floor of a gifts import (make bench, bench_imports): the same CSV
-- loaded by PostgreSQL alone into tables like orders.orders,
-- order_donations and order_payments, with their indexes and foreign keys
-- (the batch, the fund, the order): COPY into a staging table, then one
-- set-based INSERT … SELECT per table and batch (in transactions of the
-- import's batch size), the contact found by its external id and the fund
-- by its name as the import does. Run after the contacts import, with
--   psql -v tenant=<uuid> -v file=<csv> -v batch=5000 -f scripts/bench-imports-floor-gifts.sql
\set ON_ERROR_STOP on
SET client_min_messages = warning;
-- The batches' statements run inside a procedure, whose plan cache
-- would settle on a generic plan for "ord BETWEEN lo AND lo + step - 1":
-- seen planning the gifts' joins so that 35,000 of 300,000 rows took 15
-- minutes. Each batch is planned for its own range, as the import's
-- statements are.
SET plan_cache_mode = force_custom_plan;
DROP SCHEMA IF EXISTS bench_floor_gifts CASCADE;
CREATE SCHEMA bench_floor_gifts;
CREATE TABLE bench_floor_gifts.batches (LIKE orders.batches INCLUDING ALL);
CREATE TABLE bench_floor_gifts.orders (LIKE orders.orders INCLUDING ALL,
    FOREIGN KEY (tenant_id, batch_id) REFERENCES bench_floor_gifts.batches (tenant_id, id));
CREATE TABLE bench_floor_gifts.order_donations (LIKE orders.order_donations INCLUDING ALL,
    FOREIGN KEY (tenant_id, order_id) REFERENCES bench_floor_gifts.orders (tenant_id, id) DEFERRABLE INITIALLY DEFERRED,
    FOREIGN KEY (tenant_id, fund_id) REFERENCES orders.funds (tenant_id, id));
CREATE TABLE bench_floor_gifts.order_payments (LIKE orders.order_payments INCLUDING ALL,
    FOREIGN KEY (tenant_id, order_id) REFERENCES bench_floor_gifts.orders (tenant_id, id) DEFERRABLE INITIALLY DEFERRED);
CREATE UNLOGGED TABLE bench_floor_gifts.stage (
    external_id text, contact_external_id text, gift_date date, amount numeric, currency text, fund text, method text,
    ord bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
-- Ids as the import makes them (idAt): UUIDv7-like, their first 48 bits
-- the gift's time (noon of its date), so the primary keys' inserts
-- spread as the import's do, not over every leaf page as random ids
-- would; the rest is the row number and the kind (order, line, payment).
CREATE FUNCTION bench_floor_gifts.id(d date, n bigint, kind int) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
    SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || lpad(to_hex(kind), 3, '0') || '-8000-' || lpad(to_hex(n), 12, '0'))::uuid
    FROM (SELECT lpad(to_hex((extract(epoch FROM d + time '12:00') * 1000)::bigint), 12, '0') AS h) x
$$;
-- One transaction per batch of :batch rows, as the import commits (see
-- bench-imports-floor-contacts.sql: a long transaction holds back every
-- event feed on the server).
CREATE PROCEDURE bench_floor_gifts.load(tenant uuid, step int) LANGUAGE plpgsql AS $$
DECLARE
    lo bigint := 1;
    last bigint;
BEGIN
    SELECT max(ord) INTO last FROM bench_floor_gifts.stage;
    WHILE lo <= last LOOP
        INSERT INTO bench_floor_gifts.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor,
            item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, created_at, external_id, import_id)
        SELECT tenant, bench_floor_gifts.id(s.gift_date, s.ord, 1), s.ord, c.id, 'Completed', s.currency, (s.amount * 100)::bigint, 0, (s.amount * 100)::bigint,
            (s.amount * 100)::bigint, true, false, '00000000-0000-0000-0000-000000000001', s.gift_date + time '12:00', s.external_id,
            '00000000-0000-0000-0000-000000000002'
        FROM bench_floor_gifts.stage s
        CROSS JOIN LATERAL (SELECT id FROM contacts.contacts WHERE tenant_id = tenant AND external_id = s.contact_external_id LIMIT 1) c
        WHERE s.ord BETWEEN lo AND lo + step - 1;
        INSERT INTO bench_floor_gifts.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible)
        SELECT tenant, bench_floor_gifts.id(s.gift_date, s.ord, 1), bench_floor_gifts.id(s.gift_date, s.ord, 2), 0, f.id, f.name, (s.amount * 100)::bigint, f.is_tax_deductible
        FROM bench_floor_gifts.stage s
        CROSS JOIN LATERAL (SELECT id, name, is_tax_deductible FROM orders.funds WHERE tenant_id = tenant AND lower(name) = lower(s.fund)) f
        WHERE s.ord BETWEEN lo AND lo + step - 1;
        INSERT INTO bench_floor_gifts.order_payments (tenant_id, order_id, id, position, method, amount_minor, status)
        SELECT tenant, bench_floor_gifts.id(gift_date, ord, 1), bench_floor_gifts.id(gift_date, ord, 3), 0, method, (amount * 100)::bigint, 'Captured' FROM bench_floor_gifts.stage
        WHERE ord BETWEEN lo AND lo + step - 1;
        COMMIT;
        lo := lo + step;
    END LOOP;
END $$;
INSERT INTO bench_floor_gifts.batches (tenant_id, id, name) VALUES (:'tenant', '00000000-0000-0000-0000-000000000001', 'Floor');
SELECT clock_timestamp() AS floor_start \gset
-- psql does not interpolate variables into \copy itself.
\set copy '\\copy bench_floor_gifts.stage (external_id, contact_external_id, gift_date, amount, currency, fund, method) FROM ' :'file' ' WITH (FORMAT csv, HEADER true)'
:copy
-- As the import: statistics for the staged rows, and each batch's joins
-- as index probes, LATERAL so that the staged rows lead whatever the
-- contacts' statistics (just loaded, not yet analyzed) say; the import
-- turns hash and merge joins off for the same reason: a hash of the
-- whole tenant's contacts per batch would grow with the tenant.
ANALYZE bench_floor_gifts.stage;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
CALL bench_floor_gifts.load(:'tenant', :batch);
SELECT extract(epoch FROM clock_timestamp() - :'floor_start'::timestamptz) AS floor_seconds \gset
\echo floor_seconds :floor_seconds
DROP SCHEMA bench_floor_gifts CASCADE;
