-- +goose Up
-- The lifetime rows by first and last gift (issue 34, docs/cohorts.md,
-- Design): first-time donors, lapsed donors, LYBUNT and SYBUNT are each a
-- range of one of these (the last gift in last fiscal year, before it, 18
-- months ago; the first in this one), counted from the index alone.
CREATE INDEX contact_giving_last_at ON orders.contact_giving (tenant_id, currency, last_at) INCLUDE (contact_id);
CREATE INDEX contact_giving_first_at ON orders.contact_giving (tenant_id, currency, first_at) INCLUDE (contact_id);

-- +goose Down
DROP INDEX orders.contact_giving_first_at;
DROP INDEX orders.contact_giving_last_at;
