-- +goose Up
-- What a cohort driven by something other than the contacts themselves
-- needs of them (issue 34, docs/cohorts.md, Design).
--
-- A definition whose every member has given is counted from the donors'
-- lifetime rows (orders.contact_giving), not from every contact; a merged
-- tombstone leaves the cohort as it leaves report_contact_cohort_v1 (its
-- gifts moved to the survivor, so it has no row: the check costs a hash of
-- the tenant's tombstones, read through contacts_merged_into).
CREATE VIEW contacts.report_contact_tombstones_v1 AS
SELECT tenant_id, id AS contact_id
FROM contacts.contacts
WHERE merged_into IS NOT NULL;

-- "Created this month" (new-this-month, a createdAt condition) is a range
-- of this index, not a scan of the tenant.
CREATE INDEX contacts_created_at ON contacts.contacts (tenant_id, created_at);

-- +goose Down
DROP INDEX contacts.contacts_created_at;
DROP VIEW contacts.report_contact_tombstones_v1;
