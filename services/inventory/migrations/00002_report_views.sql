-- +goose Up
-- A read-only view for the reports service, versioned by name: a breaking
-- change adds report_items_v2 beside it. Readers filter by tenant_id.
CREATE VIEW inventory.report_items_v1 AS
SELECT tenant_id, id AS item_id, sku, name, category, price_minor, currency,
       fair_market_value_minor, track_stock, stock_on_hand, active
FROM inventory.items;

-- +goose Down
DROP VIEW inventory.report_items_v1;
