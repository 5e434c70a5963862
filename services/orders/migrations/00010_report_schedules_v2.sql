-- +goose Up
-- report_schedules_v2: v1's columns and what places a schedule's coming
-- installments (the upcoming-recurring report): the date its periods
-- count from (anchor_date, the start date unless an amendment moved it),
-- the retry day of a declined installment and the resume day of a paused
-- schedule. v1 stays as it is for its readers.
CREATE VIEW orders.report_schedules_v2 AS
SELECT s.tenant_id, s.id AS schedule_id, s.contact_id, s.amount_minor, s.currency, s.frequency,
       s.start_date, s.end_date, s.fund_id, f.name AS fund_name, s.campaign_id, s.status,
       s.next_charge_date, (s.created_at AT TIME ZONE 'UTC')::date AS created_date,
       CASE WHEN s.status = 'cancelled' THEN (s.updated_at AT TIME ZONE 'UTC')::date END AS cancelled_date,
       coalesce(s.anchor_date, s.start_date) AS anchor_date, s.retry_on, s.paused_until
FROM orders.recurring_donations s
JOIN orders.funds f ON f.tenant_id = s.tenant_id AND f.id = s.fund_id;

-- +goose Down
DROP VIEW orders.report_schedules_v2;
