-- +goose Up
-- What each contact gave in the last year or so, kept on its lifetime row
-- (issue 34, docs/cohorts.md, "Rolling windows"): the major-donors cohort
-- ("at least the threshold in the last 12 months") and any window that
-- starts within days of it and runs to today read one row per donor
-- instead of aggregating a year of month rows (≈ 700,000 at 3,000,000
-- gifts, 1.5-2.4 s).
--
-- A tenant's rolling window starts at orders.giving_rolling.from_at, an
-- instant the orders service's housekeeping moves forward once a day to
-- orders.rolling_target(now): the UTC midnight 369 days back, so that it
-- is never after the start of a 12-month window in any time zone (a
-- local "today minus a year plus a day" is at least 367 days back in
-- UTC). contact_giving.recent_minor and recent_count are the net and the
-- count of the contact's gifts in that currency dated at or after from_at;
-- a reader's window [s, t) with from_at <= s is recent less the gifts in
-- [from_at, s) and those at or after t: a few days of gifts.
--
-- Writers and the move forward are serialized per tenant by an advisory
-- lock: every trigger takes it shared (before its contact's lock), the
-- move takes it exclusive, waits for the gifts being committed, and
-- subtracts the gifts that left the window in the same transaction as it
-- moves from_at.
ALTER TABLE orders.contact_giving
    ADD COLUMN recent_minor bigint NOT NULL DEFAULT 0,
    ADD COLUMN recent_count integer NOT NULL DEFAULT 0;

CREATE TABLE orders.giving_rolling (
    tenant_id uuid        PRIMARY KEY,
    from_at   timestamptz NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION orders.rolling_target(p_now timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
    SELECT (date_trunc('day', p_now AT TIME ZONE 'UTC') - interval '369 days') AT TIME ZONE 'UTC'
$$;
-- +goose StatementEnd

-- rolling_month is the first UTC month that starts at or after p_from:
-- the months from it on are whole in the window, the gifts of
-- [p_from, rolling_month) are read one by one.
-- +goose StatementBegin
CREATE FUNCTION orders.rolling_month(p_from timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN date_trunc('month', p_from AT TIME ZONE 'UTC') = p_from AT TIME ZONE 'UTC'
                THEN (p_from AT TIME ZONE 'UTC')::date
                ELSE (date_trunc('month', p_from AT TIME ZONE 'UTC') + interval '1 month')::date END
$$;
-- +goose StatementEnd

-- giving_rolling_lock takes the tenant's rolling lock — shared for a
-- trigger, exclusive for a writer of many contacts' rows at once — and
-- returns its window's start, starting one at today's target for a
-- tenant's first gift.
-- +goose StatementBegin
CREATE FUNCTION orders.giving_rolling_lock(p_tenant uuid, p_exclusive boolean) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    k bigint := hashtextextended('orders.giving_rolling:' || p_tenant::text, 0);
    f timestamptz;
BEGIN
    IF p_exclusive THEN
        PERFORM pg_advisory_xact_lock(k);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(k);
    END IF;
    SELECT from_at INTO f FROM orders.giving_rolling WHERE tenant_id = p_tenant;
    IF NOT FOUND THEN
        INSERT INTO orders.giving_rolling (tenant_id, from_at) VALUES (p_tenant, orders.rolling_target(now()))
        ON CONFLICT (tenant_id) DO NOTHING;
        SELECT from_at INTO f FROM orders.giving_rolling WHERE tenant_id = p_tenant;
    END IF;
    RETURN f;
END;
$$;
-- +goose StatementEnd

-- giving_rolling_from is the lock shared: every giving trigger's.
-- +goose StatementBegin
CREATE FUNCTION orders.giving_rolling_from(p_tenant uuid) RETURNS timestamptz
LANGUAGE sql VOLATILE AS $$
    SELECT orders.giving_rolling_lock(p_tenant, false)
$$;
-- +goose StatementEnd

-- set_giving_recent recomputes recent_minor and recent_count of one
-- contact's lifetime rows, or of the whole tenant's (p_contact null), from
-- the whole months of the window and the gifts of its first partial month.
-- +goose StatementBegin
CREATE FUNCTION orders.set_giving_recent(p_tenant uuid, p_contact bigint, p_from timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    nil uuid := '00000000-0000-0000-0000-000000000000'::uuid;
    m   date := orders.rolling_month(p_from);
    mt  timestamptz := m::timestamp AT TIME ZONE 'UTC';
BEGIN
    IF p_contact IS NOT NULL THEN
        -- One contact (a refund, a void, a move): its own rows by index.
        UPDATE orders.contact_giving c SET (recent_minor, recent_count) = (
            SELECT coalesce(sum(x.net), 0), coalesce(sum(x.cnt), 0)
            FROM (SELECT net_minor AS net, gift_count AS cnt FROM orders.contact_giving_months
                  WHERE tenant_id = p_tenant AND contact_id = p_contact AND month >= m AND fund_id = nil AND currency = c.currency
                  UNION ALL
                  SELECT donation_subtotal_minor - donation_refunded_minor, 1 FROM orders.orders
                  WHERE tenant_id = p_tenant AND contact_id = p_contact AND has_donations
                    AND status IN ('Completed', 'PartiallyRefunded') AND created_at >= p_from AND created_at < mt
                    AND currency = c.currency AND donation_subtotal_minor - donation_refunded_minor > 0) x)
        WHERE c.tenant_id = p_tenant AND c.contact_id = p_contact;
        RETURN;
    END IF;
    UPDATE orders.contact_giving c SET recent_minor = coalesce(r.net, 0), recent_count = coalesce(r.cnt, 0)
    FROM orders.contact_giving c0
    LEFT JOIN (
        SELECT x.contact_id, x.currency, sum(x.net)::bigint AS net, sum(x.cnt)::integer AS cnt
        FROM (SELECT contact_id, currency, net_minor AS net, gift_count AS cnt FROM orders.contact_giving_months
              WHERE tenant_id = p_tenant AND fund_id = nil AND month >= m
              UNION ALL
              SELECT contact_id, currency, donation_subtotal_minor - donation_refunded_minor, 1 FROM orders.orders
              WHERE tenant_id = p_tenant AND has_donations AND status IN ('Completed', 'PartiallyRefunded')
                AND created_at >= p_from AND created_at < mt AND donation_subtotal_minor - donation_refunded_minor > 0) x
        GROUP BY x.contact_id, x.currency
    ) r ON r.contact_id = c0.contact_id AND r.currency = c0.currency
    WHERE c0.tenant_id = p_tenant
      AND c.tenant_id = c0.tenant_id AND c.contact_id = c0.contact_id AND c.currency = c0.currency;
END;
$$;
-- +goose StatementEnd

-- advance_giving_rolling moves the tenant's window forward to p_to: the
-- gifts of [from_at, p_to) leave every contact's recent figures, in one
-- transaction with the move, after the gifts being committed.
-- +goose StatementBegin
CREATE FUNCTION orders.advance_giving_rolling(p_tenant uuid, p_to timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    f timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('orders.giving_rolling:' || p_tenant::text, 0));
    SELECT from_at INTO f FROM orders.giving_rolling WHERE tenant_id = p_tenant;
    IF NOT FOUND OR f >= p_to THEN
        RETURN false;
    END IF;
    UPDATE orders.contact_giving c SET recent_minor = c.recent_minor - d.net, recent_count = c.recent_count - d.cnt
    FROM (SELECT contact_id, currency, sum(net)::bigint AS net, count(*)::integer AS cnt
          FROM (SELECT contact_id, currency, donation_subtotal_minor - donation_refunded_minor AS net
                FROM orders.orders
                WHERE tenant_id = p_tenant AND has_donations AND status IN ('Completed', 'PartiallyRefunded')
                  AND created_at >= f AND created_at < p_to) o
          WHERE o.net > 0 GROUP BY contact_id, currency) d
    WHERE c.tenant_id = p_tenant AND c.contact_id = d.contact_id AND c.currency = d.currency;
    UPDATE orders.giving_rolling SET from_at = p_to WHERE tenant_id = p_tenant;
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- A new gift adds to recent when it is in the window. The tenant's lock
-- is taken before the contact's (the move takes it exclusive, then row
-- locks of contact_giving: a trigger that holds a contact's rows already
-- holds the tenant's lock, so the two never wait for each other in a
-- cycle).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.add_contact_gift(g orders.orders) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    nil uuid := '00000000-0000-0000-0000-000000000000'::uuid;
    m   date := date_trunc('month', g.created_at AT TIME ZONE 'UTC')::date;
    net bigint := g.donation_subtotal_minor - g.donation_refunded_minor;
    r   integer := CASE WHEN g.created_at >= orders.giving_rolling_from(g.tenant_id) THEN 1 ELSE 0 END;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(g.tenant_id::text, g.contact_id));
    IF EXISTS (SELECT 1 FROM orders.contact_giving_months
               WHERE tenant_id = g.tenant_id AND fund_id = nil AND month = m AND contact_id = g.contact_id
                 AND currency = g.currency AND rebuilt_by = pg_current_xact_id()) THEN
        RETURN;
    END IF;
    INSERT INTO orders.contact_giving_months AS c
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    VALUES (g.tenant_id, nil, m, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at)
    ON CONFLICT (tenant_id, fund_id, month, contact_id, currency) DO UPDATE SET
        gift_count = c.gift_count + 1, net_minor = c.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
        first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at);
    INSERT INTO orders.contact_giving_months AS c
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT g.tenant_id, d.fund_id, m, g.contact_id, g.currency, 1, sum(d.amount_minor - d.refunded_minor),
           sum(d.amount_minor - d.refunded_minor), g.created_at, g.created_at
    FROM orders.order_donations d
    WHERE d.tenant_id = g.tenant_id AND d.order_id = g.id
    GROUP BY d.fund_id
    HAVING sum(d.amount_minor - d.refunded_minor) > 0
    ON CONFLICT (tenant_id, fund_id, month, contact_id, currency) DO UPDATE SET
        gift_count = c.gift_count + 1, net_minor = c.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
        first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at);
    INSERT INTO orders.contact_giving AS c
        (tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at, recent_minor, recent_count)
    VALUES (g.tenant_id, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at, net * r, r)
    ON CONFLICT (tenant_id, contact_id, currency) DO UPDATE SET
        gift_count = c.gift_count + 1, net_minor = c.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
        first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at),
        recent_minor = c.recent_minor + EXCLUDED.recent_minor, recent_count = c.recent_count + EXCLUDED.recent_count;
END;
$$;
-- +goose StatementEnd

-- A rebuilt month rebuilds the lifetime row; its recent figures are
-- computed again with it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_contact_month(p_tenant uuid, p_contact bigint, p_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    m date := date_trunc('month', p_at AT TIME ZONE 'UTC')::date;
    f timestamptz := orders.giving_rolling_from(p_tenant);
BEGIN
    PERFORM orders.refresh_contact_giving(p_tenant, p_contact, m);
    UPDATE orders.contact_giving_months SET rebuilt_by = pg_current_xact_id()
    WHERE tenant_id = p_tenant AND fund_id = '00000000-0000-0000-0000-000000000000'::uuid
      AND month = m AND contact_id = p_contact;
    PERFORM orders.set_giving_recent(p_tenant, p_contact, f);
END;
$$;
-- +goose StatementEnd

-- The bulk rebuild (00021's, renamed) now holds the tenant's lock
-- exclusive, and computes every row's recent figures against the
-- tenant's window (started at today's target if the tenant has none).
ALTER FUNCTION orders.rebuild_contact_giving(uuid) RENAME TO rebuild_contact_giving_rows;

-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_contact_giving(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    f timestamptz := orders.giving_rolling_lock(p_tenant, true);
BEGIN
    PERFORM orders.rebuild_contact_giving_rows(p_tenant);
    PERFORM orders.set_giving_recent(p_tenant, NULL, f);
END;
$$;
-- +goose StatementEnd

-- Every tenant with summaries starts its window at today's target.
INSERT INTO orders.giving_rolling (tenant_id, from_at)
SELECT DISTINCT tenant_id, orders.rolling_target(now()) FROM orders.contact_giving;
SELECT orders.set_giving_recent(tenant_id, NULL, from_at) FROM orders.giving_rolling;

-- The major donors are a range of this index: a window's net is at most
-- its contact's recent net.
CREATE INDEX contact_giving_recent ON orders.contact_giving (tenant_id, currency, recent_minor) INCLUDE (contact_id);

CREATE OR REPLACE VIEW orders.report_contact_giving_v1 AS
SELECT tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at, recent_minor, recent_count
FROM orders.contact_giving;

CREATE VIEW orders.report_giving_rolling_v1 AS
SELECT tenant_id, from_at FROM orders.giving_rolling;

-- +goose Down
-- Forward-only, like every migration here (DESIGN.md): the view cannot
-- drop its new columns by CREATE OR REPLACE, and the recent figures are
-- harmless to a reader and a writer that ignore them.
