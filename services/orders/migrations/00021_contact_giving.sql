-- +goose Up
-- Giving summaries per contact (issue 34, docs/cohorts.md, Design): what
-- cohorts read instead of scanning every order.
--
-- contact_giving_months holds, per contact, currency and UTC calendar
-- month, the month's gifts: one row for all funds (fund_id the nil uuid)
-- and one per fund the month's gifts gave to. A gift counts while it
-- stands (Completed or PartiallyRefunded) and has a net donation above
-- zero; its amount is the net donation (refunds subtracted), its fund
-- share the net of its lines to that fund. Months are UTC so the rows do
-- not depend on the tenant's time zone (a setting that may change); a
-- reader's window in local dates takes the months it covers whole and the
-- gifts themselves at its two partial edges.
--
-- contact_giving is each contact's lifetime row per currency, summed from
-- its all-funds months.
--
-- Both are kept by orders.refresh_contact_giving, which recomputes one
-- contact's month (and lifetime) from the orders themselves. It runs from
-- a deferred constraint trigger on orders.orders, so it runs at commit,
-- inside the transaction that recorded, refunded, voided, imported or
-- moved (merged) the gift, whichever code path wrote it, and sees the
-- transaction's final rows (a refund's line shares are written after the
-- order row). An advisory lock per contact serializes two transactions
-- that refresh the same contact: the second recomputes after the first
-- commits, from a fresh snapshot (READ COMMITTED), so neither loses the
-- other's gift.
CREATE TABLE orders.contact_giving_months (
    tenant_id     uuid        NOT NULL,
    fund_id       uuid        NOT NULL,
    month         date        NOT NULL,
    contact_id    bigint      NOT NULL,
    currency      text        NOT NULL,
    gift_count    integer     NOT NULL,
    net_minor     bigint      NOT NULL,
    largest_minor bigint      NOT NULL,
    first_at      timestamptz NOT NULL,
    last_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, fund_id, month, contact_id, currency)
) WITH (fillfactor = 90);
CREATE INDEX contact_giving_months_contact ON orders.contact_giving_months (tenant_id, contact_id, month);

CREATE TABLE orders.contact_giving (
    tenant_id     uuid        NOT NULL,
    contact_id    bigint      NOT NULL,
    currency      text        NOT NULL,
    gift_count    integer     NOT NULL,
    net_minor     bigint      NOT NULL,
    largest_minor bigint      NOT NULL,
    first_at      timestamptz NOT NULL,
    last_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, contact_id, currency)
) WITH (fillfactor = 90);

-- +goose StatementBegin
CREATE FUNCTION orders.refresh_contact_giving(p_tenant uuid, p_contact bigint, p_month date) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    m_from timestamptz := p_month::timestamp AT TIME ZONE 'UTC';
    m_to   timestamptz := (p_month + interval '1 month')::timestamp AT TIME ZONE 'UTC';
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant::text, p_contact));
    DELETE FROM orders.contact_giving_months WHERE tenant_id = p_tenant AND contact_id = p_contact AND month = p_month;
    INSERT INTO orders.contact_giving_months
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, '00000000-0000-0000-0000-000000000000'::uuid, p_month, p_contact, o.currency,
           count(*), sum(o.net), max(o.net), min(o.created_at), max(o.created_at)
    FROM (SELECT currency, created_at, donation_subtotal_minor - donation_refunded_minor AS net
          FROM orders.orders
          WHERE tenant_id = p_tenant AND contact_id = p_contact AND has_donations
            AND status IN ('Completed', 'PartiallyRefunded') AND created_at >= m_from AND created_at < m_to) o
    WHERE o.net > 0
    GROUP BY o.currency;
    INSERT INTO orders.contact_giving_months
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, g.fund_id, p_month, p_contact, g.currency,
           count(*), sum(g.net), max(g.net), min(g.created_at), max(g.created_at)
    FROM (SELECT o.currency, o.created_at, d.fund_id, sum(d.amount_minor - d.refunded_minor) AS net
          FROM orders.orders o
          JOIN orders.order_donations d ON d.tenant_id = o.tenant_id AND d.order_id = o.id
          WHERE o.tenant_id = p_tenant AND o.contact_id = p_contact AND o.has_donations
            AND o.status IN ('Completed', 'PartiallyRefunded') AND o.created_at >= m_from AND o.created_at < m_to
          GROUP BY o.id, o.currency, o.created_at, d.fund_id) g
    WHERE g.net > 0
    GROUP BY g.currency, g.fund_id;
    DELETE FROM orders.contact_giving WHERE tenant_id = p_tenant AND contact_id = p_contact;
    INSERT INTO orders.contact_giving (tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, p_contact, currency, sum(gift_count), sum(net_minor), max(largest_minor), min(first_at), max(last_at)
    FROM orders.contact_giving_months
    WHERE tenant_id = p_tenant AND contact_id = p_contact AND fund_id = '00000000-0000-0000-0000-000000000000'::uuid
    GROUP BY currency;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION orders.contact_giving_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.has_donations AND (OLD.contact_id <> NEW.contact_id
        OR date_trunc('month', OLD.created_at AT TIME ZONE 'UTC') <> date_trunc('month', NEW.created_at AT TIME ZONE 'UTC')) THEN
        PERFORM orders.refresh_contact_giving(OLD.tenant_id, OLD.contact_id, date_trunc('month', OLD.created_at AT TIME ZONE 'UTC')::date);
    END IF;
    IF NEW.has_donations THEN
        PERFORM orders.refresh_contact_giving(NEW.tenant_id, NEW.contact_id, date_trunc('month', NEW.created_at AT TIME ZONE 'UTC')::date);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE CONSTRAINT TRIGGER orders_contact_giving_insert AFTER INSERT ON orders.orders
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.has_donations)
    EXECUTE FUNCTION orders.contact_giving_changed();
CREATE CONSTRAINT TRIGGER orders_contact_giving_update AFTER UPDATE ON orders.orders
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((OLD.has_donations OR NEW.has_donations) AND (OLD.status IS DISTINCT FROM NEW.status
        OR OLD.donation_refunded_minor IS DISTINCT FROM NEW.donation_refunded_minor OR OLD.contact_id IS DISTINCT FROM NEW.contact_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.currency IS DISTINCT FROM NEW.currency))
    EXECUTE FUNCTION orders.contact_giving_changed();

-- rebuild_contact_giving recomputes a tenant's summaries in bulk, set-
-- based: the back-fill below, and loaders that write orders with the
-- triggers off (the benchmark's seeder).
-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_contact_giving(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM orders.contact_giving_months WHERE tenant_id = p_tenant;
    DELETE FROM orders.contact_giving WHERE tenant_id = p_tenant;
    INSERT INTO orders.contact_giving_months
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, '00000000-0000-0000-0000-000000000000'::uuid, o.month, o.contact_id, o.currency,
           count(*), sum(o.net), max(o.net), min(o.created_at), max(o.created_at)
    FROM (SELECT contact_id, currency, created_at, date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month,
                 donation_subtotal_minor - donation_refunded_minor AS net
          FROM orders.orders
          WHERE tenant_id = p_tenant AND has_donations AND status IN ('Completed', 'PartiallyRefunded')) o
    WHERE o.net > 0
    GROUP BY o.month, o.contact_id, o.currency;
    INSERT INTO orders.contact_giving_months
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, g.fund_id, g.month, g.contact_id, g.currency,
           count(*), sum(g.net), max(g.net), min(g.created_at), max(g.created_at)
    FROM (SELECT o.contact_id, o.currency, o.created_at, date_trunc('month', o.created_at AT TIME ZONE 'UTC')::date AS month,
                 d.fund_id, sum(d.amount_minor - d.refunded_minor) AS net
          FROM orders.orders o
          JOIN orders.order_donations d ON d.tenant_id = o.tenant_id AND d.order_id = o.id
          WHERE o.tenant_id = p_tenant AND o.has_donations AND o.status IN ('Completed', 'PartiallyRefunded')
          GROUP BY o.id, o.contact_id, o.currency, o.created_at, d.fund_id) g
    WHERE g.net > 0
    GROUP BY g.fund_id, g.month, g.contact_id, g.currency;
    INSERT INTO orders.contact_giving (tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, contact_id, currency, sum(gift_count), sum(net_minor), max(largest_minor), min(first_at), max(last_at)
    FROM orders.contact_giving_months
    WHERE tenant_id = p_tenant AND fund_id = '00000000-0000-0000-0000-000000000000'::uuid
    GROUP BY contact_id, currency;
END;
$$;
-- +goose StatementEnd

SELECT orders.rebuild_contact_giving(t.tenant_id) FROM (SELECT DISTINCT tenant_id FROM orders.orders WHERE has_donations) t;

-- The views the reports service reads (cohorts). fund_id is the nil uuid
-- on a month's all-funds row.
CREATE VIEW orders.report_contact_giving_v1 AS
SELECT tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
FROM orders.contact_giving;

CREATE VIEW orders.report_contact_giving_months_v1 AS
SELECT tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
FROM orders.contact_giving_months;

-- +goose Down
DROP VIEW orders.report_contact_giving_months_v1;
DROP VIEW orders.report_contact_giving_v1;
DROP TRIGGER orders_contact_giving_update ON orders.orders;
DROP TRIGGER orders_contact_giving_insert ON orders.orders;
DROP FUNCTION orders.rebuild_contact_giving(uuid);
DROP FUNCTION orders.contact_giving_changed();
DROP FUNCTION orders.refresh_contact_giving(uuid, bigint, date);
DROP TABLE orders.contact_giving;
DROP TABLE orders.contact_giving_months;
