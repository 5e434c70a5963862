-- The floor of a contacts import (make bench, bench_imports): what
-- PostgreSQL alone takes to load the same CSV into tables like the
-- import's, with the same indexes (the trigram GIN included) and foreign
-- keys: COPY into a staging table, then one set-based INSERT … SELECT per
-- table. No matching, no validation, no per-batch bookkeeping: everything
-- the real import takes beyond this is ours. Run with
--   psql -v tenant=<uuid> -v file=<csv> -f scripts/bench-imports-floor-contacts.sql
\set ON_ERROR_STOP on
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS bench_floor_contacts CASCADE;
CREATE SCHEMA bench_floor_contacts;
CREATE TABLE bench_floor_contacts.contacts (LIKE contacts.contacts INCLUDING ALL);
CREATE TABLE bench_floor_contacts.contact_emails (LIKE contacts.contact_emails INCLUDING ALL,
    FOREIGN KEY (tenant_id, contact_id) REFERENCES bench_floor_contacts.contacts (tenant_id, id));
CREATE TABLE bench_floor_contacts.contact_addresses (LIKE contacts.contact_addresses INCLUDING ALL,
    FOREIGN KEY (tenant_id, contact_id) REFERENCES bench_floor_contacts.contacts (tenant_id, id));
CREATE UNLOGGED TABLE bench_floor_contacts.stage (
    external_id text, first_name text, last_name text, email text, line1 text, city text, postal_code text, country text, tags text,
    ord bigint GENERATED ALWAYS AS IDENTITY);
SELECT clock_timestamp() AS floor_start \gset
-- psql does not interpolate variables into \copy itself.
\set copy '\\copy bench_floor_contacts.stage (external_id, first_name, last_name, email, line1, city, postal_code, country, tags) FROM ' :'file' ' WITH (FORMAT csv, HEADER true)'
:copy
BEGIN;
INSERT INTO bench_floor_contacts.contacts (tenant_id, id, contact_type, first_name, last_name, external_id, tags, tag_keys,
    name_key, search_text, import_id)
SELECT :'tenant', ord, 'Individual', first_name, last_name, external_id, string_to_array(tags, ';'),
    string_to_array(lower(tags), ';'), lower(first_name || ' ' || last_name), lower(first_name || ' ' || last_name), gen_random_uuid()
FROM bench_floor_contacts.stage;
INSERT INTO bench_floor_contacts.contact_emails (tenant_id, id, contact_id, position, email_address, email_key, email_type, is_primary)
SELECT :'tenant', ord, ord, 0, email, lower(email), 'Personal', true FROM bench_floor_contacts.stage WHERE email <> '';
INSERT INTO bench_floor_contacts.contact_addresses (tenant_id, id, contact_id, position, address_type, is_primary, line1, city,
    postal_code, postal_key, country, name_key)
SELECT :'tenant', ord, ord, 0, 'Home', true, line1, city, postal_code, upper(postal_code), country, lower(first_name || ' ' || last_name)
FROM bench_floor_contacts.stage WHERE line1 <> '';
COMMIT;
SELECT extract(epoch FROM clock_timestamp() - :'floor_start'::timestamptz) AS floor_seconds \gset
\echo floor_seconds :floor_seconds
DROP SCHEMA bench_floor_contacts CASCADE;
