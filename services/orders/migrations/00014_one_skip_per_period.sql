-- +goose Up
-- A period of a schedule is skipped at most once (issue 28, item 8). A
-- skip, a PATCH of nextChargeDate back onto the skipped period and a skip
-- again recorded the period as skipped each time (41 rows on one
-- schedule). SkipInstallment now records nothing for a period that is
-- claimed already; the index holds it for any later writer. Rows left by
-- the old behaviour are folded into the first one before it is built.
DELETE FROM orders.recurring_installments i
USING orders.recurring_installments first
WHERE i.status = 'skipped' AND first.status = 'skipped'
  AND first.tenant_id = i.tenant_id AND first.schedule_id = i.schedule_id AND first.period = i.period
  AND (first.created_at, first.id) < (i.created_at, i.id);

CREATE UNIQUE INDEX recurring_installments_one_skip ON orders.recurring_installments (tenant_id, schedule_id, period)
    WHERE status = 'skipped';

-- +goose Down
DROP INDEX orders.recurring_installments_one_skip;
