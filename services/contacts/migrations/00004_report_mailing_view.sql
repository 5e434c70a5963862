-- +goose Up
-- A read-only view for the reports service's receipts and statements: each
-- contact's display name (as report_contacts_v1 makes it), primary email
-- and primary postal address, where it has them. A contact with no row
-- marked primary falls back to its first by position, as the contact
-- document lists them. Readers filter by tenant_id.
CREATE VIEW contacts.report_contact_mailing_v1 AS
SELECT c.tenant_id, c.contact_id, c.display_name,
       e.email_address AS email,
       a.line1, a.line2, a.city, a.state_province, a.postal_code, a.country
FROM contacts.report_contacts_v1 c
LEFT JOIN LATERAL (
    SELECT email_address FROM contacts.contact_emails
    WHERE tenant_id = c.tenant_id AND contact_id = c.contact_id
    ORDER BY is_primary DESC, position LIMIT 1) e ON true
LEFT JOIN LATERAL (
    SELECT line1, line2, city, state_province, postal_code, country FROM contacts.contact_addresses
    WHERE tenant_id = c.tenant_id AND contact_id = c.contact_id
    ORDER BY is_primary DESC, position LIMIT 1) a ON true;

-- +goose Down
DROP VIEW contacts.report_contact_mailing_v1;
