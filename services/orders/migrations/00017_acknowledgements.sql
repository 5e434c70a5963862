-- +goose Up
-- Acknowledgements (issue 32, docs/letters.md): whether each gift (an
-- order with a donation line) was thanked. The columns are on every order
-- (a constant default is no table rewrite) and read only for gifts.
-- acknowledgement_run_id is the letter run that acknowledged the gift
-- (null when acknowledged by hand: none can be, today).
ALTER TABLE orders.orders
    ADD COLUMN acknowledgement_status text NOT NULL DEFAULT 'pending'
        CHECK (acknowledgement_status IN ('pending', 'acknowledged', 'doNotAcknowledge')),
    ADD COLUMN acknowledged_at timestamptz,
    ADD COLUMN acknowledgement_run_id uuid;

-- A letter run reads a tenant's pending gifts of a date range.
CREATE INDEX orders_pending_acknowledgement ON orders.orders (tenant_id, created_at)
    WHERE has_donations AND acknowledgement_status = 'pending';

-- One row per gift, for the reports service's letter runs: the order's
-- net gift, its funds, its first tribute and its acknowledgement.
CREATE VIEW orders.report_acknowledgements_v1 AS
SELECT o.tenant_id, o.id AS order_id, o.order_number, o.contact_id, o.created_at, o.status, o.currency, o.batch_id,
       o.donation_subtotal_minor - o.donation_refunded_minor AS donation_net_minor,
       o.acknowledgement_status, o.acknowledged_at, o.acknowledgement_run_id,
       ARRAY(SELECT DISTINCT d.fund_id FROM orders.order_donations d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id) AS fund_ids,
       (SELECT d.tribute FROM orders.order_donations d WHERE d.tenant_id = o.tenant_id AND d.order_id = o.id AND d.tribute IS NOT NULL
        ORDER BY d.position LIMIT 1) AS tribute
FROM orders.orders o
WHERE o.has_donations;
