-- +goose Up
-- Issue 20: gifts recorded by bulk imports, and contacts merged into one.

-- A merged contact's redirect: what orders keeps for the duplicate moved
-- to the survivor (ContactMoveService), and every later write for the
-- duplicate lands on the survivor (orders.contact_for_write). Chains are
-- kept flat: merging B into C also points every contact that pointed at B
-- to C, so one lookup resolves any chain.
CREATE TABLE orders.contact_redirects (
    tenant_id    uuid        NOT NULL,
    duplicate_id bigint      NOT NULL,
    survivor_id  bigint      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, duplicate_id),
    CHECK (duplicate_id <> survivor_id)
);
CREATE INDEX contact_redirects_survivor ON orders.contact_redirects (tenant_id, survivor_id);

-- contact_lock_key is the advisory lock of one contact of a tenant: a merge
-- holds it exclusively while it moves the duplicate's rows; every write of
-- a row with a contact id holds it shared (contact_for_write).
-- +goose StatementBegin
CREATE FUNCTION orders.contact_lock_key(p_tenant uuid, p_contact bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended('orders.contact:' || p_tenant::text || ':' || p_contact::text, 0)
$$;
-- +goose StatementEnd

-- contact_bulk_lock_key is the tenant's lock that bulk writers (a gift
-- import's batch, thousands of contacts) hold exclusively instead of a
-- shared lock per contact (the lock table holds ~64 per connection);
-- merges hold it shared before their contact locks.
-- +goose StatementBegin
CREATE FUNCTION orders.contact_bulk_lock_key(p_tenant uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended('orders.contacts:' || p_tenant::text, 0)
$$;
-- +goose StatementEnd

-- contact_for_write is the contact a row is written under: the contact
-- itself, or the survivor it was merged into. It holds the contact's lock
-- shared until the caller's transaction ends, so a merge of that contact
-- either committed before (and the redirect is seen) or waits for this
-- write (and then moves its row). It is VOLATILE so that each lookup takes
-- a snapshot after the lock was granted, not the calling statement's.
-- After resolving, the survivor is locked too, and the lookup repeated
-- until it is stable: a merge of the survivor itself cannot slip between.
-- +goose StatementBegin
CREATE FUNCTION orders.contact_for_write(p_tenant uuid, p_contact bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    locked bigint := p_contact;
    target bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(orders.contact_lock_key(p_tenant, p_contact));
    FOR i IN 1..10 LOOP
        SELECT coalesce((SELECT survivor_id FROM orders.contact_redirects
                         WHERE tenant_id = p_tenant AND duplicate_id = p_contact), p_contact) INTO target;
        IF target = locked THEN
            RETURN target;
        END IF;
        PERFORM pg_advisory_xact_lock_shared(orders.contact_lock_key(p_tenant, target));
        locked := target;
    END LOOP;
    RAISE EXCEPTION 'contact % of tenant % keeps being merged', p_contact, p_tenant;
END
$$;
-- +goose StatementEnd

-- Gifts of imports: the id they had in the system the file came from (a
-- tenant's gift is imported once by it) and the import that recorded them.
ALTER TABLE orders.orders ADD COLUMN external_id text;
ALTER TABLE orders.orders ADD COLUMN import_id uuid;
CREATE UNIQUE INDEX orders_tenant_external_key ON orders.orders (tenant_id, external_id) WHERE external_id IS NOT NULL;

-- Each import records its gifts in a batch of its own, found by import id.
ALTER TABLE orders.batches ADD COLUMN import_id uuid;
CREATE UNIQUE INDEX batches_import_key ON orders.batches (tenant_id, import_id) WHERE import_id IS NOT NULL;

-- What became of each row of a gift import, kept so a batch sent again
-- (an import resumed on another replica) answers the first outcome and
-- records nothing twice.
CREATE TABLE orders.import_rows (
    tenant_id  uuid        NOT NULL,
    import_id  uuid        NOT NULL,
    row        bigint      NOT NULL,
    outcome    text        NOT NULL CHECK (outcome IN ('created', 'skipped', 'failed')),
    order_id   uuid,
    "column"   text        NOT NULL DEFAULT '',
    message    text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, import_id, row)
);

-- +goose Down
DROP TABLE orders.import_rows;
DROP INDEX orders.batches_import_key;
ALTER TABLE orders.batches DROP COLUMN import_id;
DROP INDEX orders.orders_tenant_external_key;
ALTER TABLE orders.orders DROP COLUMN import_id;
ALTER TABLE orders.orders DROP COLUMN external_id;
DROP FUNCTION orders.contact_for_write(uuid, bigint);
DROP FUNCTION orders.contact_bulk_lock_key(uuid);
DROP FUNCTION orders.contact_lock_key(uuid, bigint);
DROP TABLE orders.contact_redirects;
