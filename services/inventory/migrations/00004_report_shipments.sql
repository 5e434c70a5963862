-- +goose Up
-- Read-only views for the reports service's fulfillment documents (packing
-- slips, pick lists; docs/fulfillment.md), versioned by name as
-- report_items_v1 is. Readers filter by tenant_id.
CREATE VIEW inventory.report_shipments_v1 AS
SELECT tenant_id, id AS shipment_id, order_id, order_number, order_date, contact_id, batch_id, status,
       shipping_address, created_at
FROM inventory.shipments;

-- A shipment's lines with the bin location their item has now.
CREATE VIEW inventory.report_shipment_lines_v1 AS
SELECT l.tenant_id, l.shipment_id, l.line_number, l.item_id, l.sku, l.name, l.quantity, i.location
FROM inventory.shipment_lines l
JOIN inventory.items i ON i.tenant_id = l.tenant_id AND i.id = l.item_id;

-- +goose Down
DROP VIEW inventory.report_shipment_lines_v1;
DROP VIEW inventory.report_shipments_v1;
