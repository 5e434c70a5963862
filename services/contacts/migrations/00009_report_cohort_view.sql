-- +goose Up
-- What the reports service's cohorts (issue 34, docs/cohorts.md) test of a
-- contact: its type, tags (tag_keys lower-cased, as the list's tag filter
-- matches), primary address's state and postal code, creation time and
-- email preference, with its display name and primary email for the
-- members' page. Tombstones leave it, as they leave report_contacts_v1.
-- The email and address columns are scalar sub-queries, not joins: a
-- query that does not name them does not evaluate them, so a count over a
-- million contacts that tests only tags reads the contacts alone.
CREATE VIEW contacts.report_contact_cohort_v1 AS
SELECT c.tenant_id, c.id AS contact_id, c.contact_type,
       CASE WHEN c.contact_type = 'Organization' AND coalesce(c.organization_name, '') <> '' THEN c.organization_name
            ELSE btrim(coalesce(c.first_name, '') || ' ' || coalesce(c.last_name, '')) END AS display_name,
       c.tags, c.tag_keys, c.created_at, c.do_not_email,
       (SELECT e.email_address FROM contacts.contact_emails e WHERE e.tenant_id = c.tenant_id AND e.contact_id = c.id
        ORDER BY e.is_primary DESC, e.position LIMIT 1) AS email,
       (SELECT a.state_province FROM contacts.contact_addresses a WHERE a.tenant_id = c.tenant_id AND a.contact_id = c.id
        ORDER BY a.is_primary DESC, a.position LIMIT 1) AS state_province,
       (SELECT a.postal_code FROM contacts.contact_addresses a WHERE a.tenant_id = c.tenant_id AND a.contact_id = c.id
        ORDER BY a.is_primary DESC, a.position LIMIT 1) AS postal_code
FROM contacts.contacts c
WHERE c.merged_into IS NULL;

-- +goose Down
DROP VIEW contacts.report_contact_cohort_v1;
