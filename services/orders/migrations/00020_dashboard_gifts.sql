-- +goose Up
-- The fundraising dashboard (issue 34, docs/dashboard.md) asks, for each
-- donor of a period, whether they gave before it (a new donor) and, for a
-- portfolio, when each of its contacts last gave (lapsed). Both are a
-- probe per contact into its counted gifts by date: this index answers
-- one from the index alone, without the order rows. It holds counted
-- gifts only (a donation line, Completed or PartiallyRefunded), so a
-- voided or fully refunded gift leaves it.
CREATE INDEX orders_contact_gifts ON orders.orders (tenant_id, contact_id, created_at)
    WHERE has_donations AND status IN ('Completed', 'PartiallyRefunded');

-- +goose Down
DROP INDEX orders.orders_contact_gifts;
