-- +goose Up
-- communicationPreferences.doNotAcknowledge (issue 32, docs/letters.md):
-- letter runs thank none of the contact's gifts.
ALTER TABLE contacts.contacts ADD COLUMN do_not_acknowledge boolean NOT NULL DEFAULT false;

-- What a letter run needs of a contact beyond its mailing block: its
-- names and preferences.
CREATE VIEW contacts.report_contact_preferences_v1 AS
SELECT tenant_id, id AS contact_id, contact_type, coalesce(first_name, '') AS first_name, coalesce(last_name, '') AS last_name,
       do_not_email, do_not_acknowledge
FROM contacts.contacts;
