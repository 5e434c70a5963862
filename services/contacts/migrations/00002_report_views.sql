-- +goose Up
-- A read-only view for the reports service, versioned by name: a breaking
-- change adds report_contacts_v2 beside it. Readers filter by tenant_id.
-- display_name is the organization's name, else "first last".
CREATE VIEW contacts.report_contacts_v1 AS
SELECT tenant_id, id AS contact_id, contact_type,
       CASE WHEN contact_type = 'Organization' AND coalesce(organization_name, '') <> '' THEN organization_name
            ELSE btrim(coalesce(first_name, '') || ' ' || coalesce(last_name, '')) END AS display_name,
       first_name, last_name, organization_name, is_active
FROM contacts.contacts;

-- +goose Down
DROP VIEW contacts.report_contacts_v1;
