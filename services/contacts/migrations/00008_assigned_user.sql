-- +goose Up
-- Portfolios (issue 34, docs/dashboard.md): a contact may be assigned to
-- a staff user (auth's user id; the service checks the membership through
-- auth before it writes, outside the transaction). No foreign key: auth's
-- tables are auth's.
ALTER TABLE contacts.contacts ADD COLUMN assigned_user_id uuid;

-- A portfolio is read by its user: the dashboard's figures start from it.
CREATE INDEX contacts_assigned_user ON contacts.contacts (tenant_id, assigned_user_id, id)
    WHERE assigned_user_id IS NOT NULL;

-- Who each contact is assigned to, for the reports service's portfolio
-- dashboards. Only assigned contacts are rows; a merged tombstone is none
-- (its gifts moved to the survivor, which keeps an assignment).
CREATE VIEW contacts.report_contact_assignments_v1 AS
SELECT tenant_id, id AS contact_id, assigned_user_id
FROM contacts.contacts
WHERE assigned_user_id IS NOT NULL AND merged_into IS NULL;
