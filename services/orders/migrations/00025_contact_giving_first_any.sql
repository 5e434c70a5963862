-- +goose Up
-- The lifetime rows by first gift in any currency (issue 34,
-- docs/dashboard.md): a period's new donors are the contacts whose first
-- gift falls in it, a range of this index, instead of a probe into each
-- donor's earlier gifts (1.7-2.3 s of a fiscal year's dashboard at
-- 300,000 gifts).
CREATE INDEX contact_giving_first_any ON orders.contact_giving (tenant_id, first_at) INCLUDE (contact_id);

-- +goose Down
DROP INDEX orders.contact_giving_first_any;
