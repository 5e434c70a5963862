-- +goose Up
-- Issue 20: bulk imports and merging duplicate contacts.

-- external_id was indexed for the list's filter already; an import also
-- looks rows up by it (a row whose externalId a contact has is a duplicate
-- match) and gift imports resolve contactExternalId through it. It stays
-- non-unique: the API has always let two contacts carry the same external
-- id, and a unique index would refuse to build on such a tenant and turn a
-- create into an error. Imports keep it unique for what they write instead
-- (docs/imports.md).
--
-- import_id is the import that created the contact (NULL for contacts made
-- through the API): imported contacts have no per-row audit rows, and this
-- column is their trail.
--
-- merged_into makes the contact a tombstone: it was merged into that
-- contact (docs/merge.md). Tombstones keep their id, names and external id
-- (so an external id still resolves, to the survivor) and lose every other
-- row to the survivor; every read but the audit feed leaves them out.
ALTER TABLE contacts.contacts
    ADD COLUMN import_id   uuid,
    ADD COLUMN merged_into bigint;

-- The tombstones merged into a contact, read when that contact is merged in
-- turn (they are re-pointed so one hop always reaches a live contact).
CREATE INDEX contacts_merged_into ON contacts.contacts (tenant_id, merged_into) WHERE merged_into IS NOT NULL;

-- The strong name match of imports (docs/imports.md) is the same name key
-- at the same postal key. The name key lives on the contact and the postal
-- key on the address, and matching across the two costs a lookup per
-- contact at the postal code (about 170,000 per 5,000-row batch at a
-- million contacts, 2 s measured); so each address carries its contact's
-- name key, written with the address and whenever the name changes
-- (store.writeRows, the directory's AddContactAddress, imports), and one
-- index probe finds the match. The index leads with (tenant_id,
-- postal_key), so it also serves what contact_addresses_postal_key served
-- (check-duplicates), which it replaces.
ALTER TABLE contacts.contact_addresses ADD COLUMN name_key text NOT NULL DEFAULT '';
UPDATE contacts.contact_addresses a SET name_key = c.name_key
FROM contacts.contacts c WHERE c.tenant_id = a.tenant_id AND c.id = a.contact_id AND c.name_key <> '';
CREATE INDEX contact_addresses_postal_name ON contacts.contact_addresses (tenant_id, postal_key, name_key) WHERE postal_key IS NOT NULL;
DROP INDEX contacts.contact_addresses_postal_key;

-- What became of each row of each import: a batch sent again (an import
-- resumed on another replica after a crash) is answered from here, so a
-- row is written at most once. Rows are kept with the import; they are a
-- few dozen bytes each.
CREATE TABLE contacts.import_rows (
    tenant_id  uuid   NOT NULL,
    import_id  uuid   NOT NULL,
    row        bigint NOT NULL,
    outcome    text   NOT NULL CHECK (outcome IN ('created', 'updated', 'skipped', 'failed')),
    contact_id bigint,
    column_name text,
    message    text,
    PRIMARY KEY (tenant_id, import_id, row)
);

-- A merge under way or done (docs/merge.md): the pending row is written
-- before the orders service moves the duplicate's orders, schedules and
-- payment methods, and marked done in the transaction that moves the rest
-- and tombstones the duplicate. A pending row older than a minute is
-- finished by the recovery loop of any replica.
CREATE TABLE contacts.merges (
    tenant_id     uuid        NOT NULL,
    duplicate_id  bigint      NOT NULL,
    survivor_id   bigint      NOT NULL,
    field_choices jsonb       NOT NULL DEFAULT '{}',
    actor         text        NOT NULL,
    state         text        NOT NULL CHECK (state IN ('pending', 'done')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    PRIMARY KEY (tenant_id, duplicate_id)
);
CREATE INDEX merges_pending ON contacts.merges (created_at) WHERE state = 'pending';

-- Reports read contacts through this view: tombstones leave it (their
-- orders moved to the survivor, so no figure names them any more).
CREATE OR REPLACE VIEW contacts.report_contacts_v1 AS
SELECT tenant_id, id AS contact_id, contact_type,
       CASE WHEN contact_type = 'Organization' AND coalesce(organization_name, '') <> '' THEN organization_name
            ELSE btrim(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) END AS display_name,
       first_name, last_name, organization_name, is_active
FROM contacts.contacts
WHERE merged_into IS NULL;

-- +goose Down
CREATE OR REPLACE VIEW contacts.report_contacts_v1 AS
SELECT tenant_id, id AS contact_id, contact_type,
       CASE WHEN contact_type = 'Organization' AND coalesce(organization_name, '') <> '' THEN organization_name
            ELSE btrim(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) END AS display_name,
       first_name, last_name, organization_name, is_active
FROM contacts.contacts;
CREATE INDEX contact_addresses_postal_key ON contacts.contact_addresses (tenant_id, postal_key) WHERE postal_key IS NOT NULL;
DROP INDEX contacts.contact_addresses_postal_name;
ALTER TABLE contacts.contact_addresses DROP COLUMN name_key;
DROP TABLE contacts.merges;
DROP TABLE contacts.import_rows;
DROP INDEX contacts.contacts_merged_into;
ALTER TABLE contacts.contacts DROP COLUMN merged_into, DROP COLUMN import_id;
