-- The floor of a contacts import (make bench, bench_imports): what
-- PostgreSQL alone takes to load the same CSV into tables like the
-- import's, with the same indexes (the trigram GIN included) and foreign
-- keys: COPY into a staging table, then one set-based INSERT … SELECT per
-- table and batch, in transactions of the import's batch size. No
-- matching, no validation, no exactly-once bookkeeping: everything the
-- real import takes beyond this is ours. Run with
--   psql -v tenant=<uuid> -v file=<csv> -v batch=5000 -f scripts/bench-imports-floor-contacts.sql
\set ON_ERROR_STOP on
SET client_min_messages = warning;
-- The batches' statements run inside a procedure, whose plan cache
-- would settle on a generic plan for "ord BETWEEN lo AND lo + step - 1":
-- seen planning the gifts' joins so that 35,000 of 300,000 rows took 15
-- minutes. Each batch is planned for its own range, as the import's
-- statements are.
SET plan_cache_mode = force_custom_plan;
DROP SCHEMA IF EXISTS bench_floor_contacts CASCADE;
CREATE SCHEMA bench_floor_contacts;
CREATE TABLE bench_floor_contacts.contacts (LIKE contacts.contacts INCLUDING ALL);
CREATE TABLE bench_floor_contacts.contact_emails (LIKE contacts.contact_emails INCLUDING ALL,
    FOREIGN KEY (tenant_id, contact_id) REFERENCES bench_floor_contacts.contacts (tenant_id, id));
CREATE TABLE bench_floor_contacts.contact_addresses (LIKE contacts.contact_addresses INCLUDING ALL,
    FOREIGN KEY (tenant_id, contact_id) REFERENCES bench_floor_contacts.contacts (tenant_id, id));
CREATE UNLOGGED TABLE bench_floor_contacts.stage (
    external_id text, first_name text, last_name text, email text, line1 text, city text, postal_code text, country text, tags text,
    ord bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
-- One transaction per batch of :batch rows, as the import commits: a
-- statement of a million rows would hold back the whole cluster's xmin
-- for minutes, and with it every event feed on the server (an event shows
-- once every older transaction has ended: docs/events.md).
CREATE PROCEDURE bench_floor_contacts.load(tenant uuid, step int) LANGUAGE plpgsql AS $$
DECLARE
    lo bigint := 1;
    last bigint;
BEGIN
    SELECT max(ord) INTO last FROM bench_floor_contacts.stage;
    WHILE lo <= last LOOP
        INSERT INTO bench_floor_contacts.contacts (tenant_id, id, contact_type, first_name, last_name, external_id, tags, tag_keys,
            name_key, search_text, import_id)
        SELECT tenant, ord, 'Individual', first_name, last_name, external_id, string_to_array(tags, ';'),
            string_to_array(lower(tags), ';'), lower(first_name || ' ' || last_name), lower(first_name || ' ' || last_name), tenant
        FROM bench_floor_contacts.stage WHERE ord BETWEEN lo AND lo + step - 1;
        INSERT INTO bench_floor_contacts.contact_emails (tenant_id, id, contact_id, position, email_address, email_key, email_type, is_primary)
        SELECT tenant, ord, ord, 0, email, lower(email), 'Personal', true FROM bench_floor_contacts.stage
        WHERE ord BETWEEN lo AND lo + step - 1 AND email <> '';
        INSERT INTO bench_floor_contacts.contact_addresses (tenant_id, id, contact_id, position, address_type, is_primary, line1, city,
            postal_code, postal_key, country, name_key)
        SELECT tenant, ord, ord, 0, 'Home', true, line1, city, postal_code, upper(postal_code), country, lower(first_name || ' ' || last_name)
        FROM bench_floor_contacts.stage WHERE ord BETWEEN lo AND lo + step - 1 AND line1 <> '';
        COMMIT;
        lo := lo + step;
    END LOOP;
END $$;
SELECT clock_timestamp() AS floor_start \gset
-- psql does not interpolate variables into \copy itself.
\set copy '\\copy bench_floor_contacts.stage (external_id, first_name, last_name, email, line1, city, postal_code, country, tags) FROM ' :'file' ' WITH (FORMAT csv, HEADER true)'
:copy
CALL bench_floor_contacts.load(:'tenant', :batch);
SELECT extract(epoch FROM clock_timestamp() - :'floor_start'::timestamptz) AS floor_seconds \gset
\echo floor_seconds :floor_seconds
DROP SCHEMA bench_floor_contacts CASCADE;
