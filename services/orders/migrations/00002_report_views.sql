-- +goose Up
-- Read-only views the reports service reads, and nothing else of this
-- schema. They are versioned by name (_v1): a change that would break a
-- reader adds a _v2 beside it instead of altering these. Every view carries
-- tenant_id; readers filter by it.
--
-- Refunds are recorded per order, not per line. The views apportion an
-- order's refunded_minor to its lines in proportion to their amounts, in
-- line order (donations by position, then items by line number), with the
-- cumulative-floor rule: a line gets floor(R·C_after/T) − floor(R·C_before/T)
-- where C is the running sum of line amounts and T the order's lines total.
-- The shares are whole minor units and add up to R exactly. The scalar
-- subquery runs only for orders with a refund.

-- One row per donation line. gift_date is the order's UTC calendar date.
CREATE VIEW orders.report_donations_v1 AS
SELECT s.*, s.amount_minor - s.refunded_minor AS net_amount_minor
FROM (
    SELECT d.tenant_id, d.order_id, d.id AS donation_id, o.order_number, o.contact_id,
           (o.created_at AT TIME ZONE 'UTC')::date AS gift_date, o.created_at,
           o.status, o.currency, d.fund_id, d.fund_name, d.campaign_id, d.appeal_id,
           d.is_tax_deductible, d.amount_minor, o.schedule_id,
           CASE WHEN o.refunded_minor = 0 THEN 0::bigint ELSE (
               SELECT (floor(o.refunded_minor::numeric * (p.before + d.amount_minor) / (o.donation_subtotal_minor + o.item_subtotal_minor))
                     - floor(o.refunded_minor::numeric * p.before / (o.donation_subtotal_minor + o.item_subtotal_minor)))::bigint
               FROM (SELECT coalesce(sum(x.amount_minor), 0) AS before FROM orders.order_donations x
                     WHERE x.tenant_id = d.tenant_id AND x.order_id = d.order_id AND x.position < d.position) p)
           END AS refunded_minor
    FROM orders.order_donations d
    JOIN orders.orders o ON o.tenant_id = d.tenant_id AND o.id = d.order_id
) s;

-- One row per item line, refunds apportioned after the order's donations.
CREATE VIEW orders.report_order_items_v1 AS
SELECT s.*, s.line_amount_minor - s.refunded_minor AS net_amount_minor
FROM (
    SELECT i.tenant_id, i.order_id, i.line_number, o.order_number, o.contact_id,
           (o.created_at AT TIME ZONE 'UTC')::date AS order_date, o.created_at, o.status, o.currency,
           i.item_id, i.sku, i.name, i.quantity, i.unit_price_minor, i.fair_market_value_minor,
           i.quantity * i.unit_price_minor AS line_amount_minor,
           CASE WHEN o.refunded_minor = 0 THEN 0::bigint ELSE (
               SELECT (floor(o.refunded_minor::numeric * (p.before + i.quantity * i.unit_price_minor) / (o.donation_subtotal_minor + o.item_subtotal_minor))
                     - floor(o.refunded_minor::numeric * p.before / (o.donation_subtotal_minor + o.item_subtotal_minor)))::bigint
               FROM (SELECT o.donation_subtotal_minor + coalesce(sum(x.quantity * x.unit_price_minor), 0) AS before FROM orders.order_items x
                     WHERE x.tenant_id = i.tenant_id AND x.order_id = i.order_id AND x.line_number < i.line_number) p)
           END AS refunded_minor
    FROM orders.order_items i
    JOIN orders.orders o ON o.tenant_id = i.tenant_id AND o.id = i.order_id
) s;

-- One row per order, with its totals.
CREATE VIEW orders.report_orders_v1 AS
SELECT tenant_id, id AS order_id, order_number, contact_id,
       (created_at AT TIME ZONE 'UTC')::date AS order_date, created_at, updated_at,
       status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor,
       deductible_minor, refunded_minor, has_donations, has_items, schedule_id
FROM orders.orders;

-- One row per refund.
CREATE VIEW orders.report_refunds_v1 AS
SELECT r.tenant_id, r.order_id, r.id AS refund_id, o.order_number, o.contact_id, o.currency,
       r.amount_minor, r.reason, (r.created_at AT TIME ZONE 'UTC')::date AS refund_date, r.created_at
FROM orders.refunds r
JOIN orders.orders o ON o.tenant_id = r.tenant_id AND o.id = r.order_id;

-- One row per recurring schedule. cancelled_date is the UTC date of the
-- last change of a cancelled schedule (cancelling is its last change).
CREATE VIEW orders.report_schedules_v1 AS
SELECT s.tenant_id, s.id AS schedule_id, s.contact_id, s.amount_minor, s.currency, s.frequency,
       s.start_date, s.end_date, s.fund_id, f.name AS fund_name, s.campaign_id, s.status,
       s.next_charge_date, (s.created_at AT TIME ZONE 'UTC')::date AS created_date,
       CASE WHEN s.status = 'cancelled' THEN (s.updated_at AT TIME ZONE 'UTC')::date END AS cancelled_date
FROM orders.recurring_donations s
JOIN orders.funds f ON f.tenant_id = s.tenant_id AND f.id = s.fund_id;

-- Reports scan a tenant's gifts by date.
CREATE INDEX orders_tenant_created ON orders.orders (tenant_id, created_at);

-- +goose Down
DROP INDEX orders.orders_tenant_created;
DROP VIEW orders.report_schedules_v1;
DROP VIEW orders.report_refunds_v1;
DROP VIEW orders.report_orders_v1;
DROP VIEW orders.report_order_items_v1;
DROP VIEW orders.report_donations_v1;
