-- +goose Up
-- A merge moves a contact's shipments (docs/merge.md) and the list filters
-- by contactId: both look shipments up by contact.
CREATE INDEX shipments_tenant_contact ON inventory.shipments (tenant_id, contact_id);
