-- +goose Up
-- A tenant's giving counted once per period, not per contact (issue 34,
-- docs/dashboard.md, "Tallies"): a fiscal year's dashboard read
-- ≈ 550,000 period rows per period at 3,000,000 gifts, about a second;
-- these tables answer it from a few thousand rows.
--
-- giving_hour_tallies: per UTC hour, currency and fund, the net of the
-- gifts dated in it (fund_id the nil uuid: all funds, with their count).
-- Hours, not the tenant's days, so that the rows do not depend on its
-- calendar: a local day or period is a run of whole hours in every zone
-- whose offset is whole hours (a reader in another zone reads the
-- gifts). Kept by statement triggers on orders and order_donations, with
-- their transition tables, as differences: each statement adds what the
-- gifts it changed count now less what they counted before (an order
-- counts while orders.gift_counts; its funds' shares are its lines' net),
-- so imports' set-based statements add one row per hour, not per gift.
--
-- giving_donor_tallies: per local period (the kinds of 00027), the
-- contacts who gave in it, those who gave in it and in the same period a
-- year earlier, and those whose first gift ever is in it (their first
-- period of the kind). Kept where a contact's period rows appear or
-- disappear (00027's functions).
--
-- Both are append-only: a writer inserts its differences and never
-- updates a row, so concurrent gifts never wait for each other here. The
-- orders housekeeping folds the new rows into one compacted row per key
-- (orders.compact_giving_tallies); a reader sums both.
CREATE TABLE orders.giving_hour_tallies (
    tenant_id uuid        NOT NULL,
    hour      timestamptz NOT NULL,
    currency  text        NOT NULL,
    fund_id   uuid        NOT NULL,
    gifts     bigint      NOT NULL,
    net_minor bigint      NOT NULL,
    compacted boolean     NOT NULL DEFAULT false
);
CREATE INDEX giving_hour_tallies_read ON orders.giving_hour_tallies (tenant_id, hour) INCLUDE (currency, fund_id, gifts, net_minor);
CREATE UNIQUE INDEX giving_hour_tallies_key ON orders.giving_hour_tallies (tenant_id, hour, currency, fund_id) WHERE compacted;
CREATE INDEX giving_hour_tallies_fresh ON orders.giving_hour_tallies (tenant_id) WHERE NOT compacted;

CREATE TABLE orders.giving_donor_tallies (
    tenant_id uuid    NOT NULL,
    kind      "char"  NOT NULL,
    period    date    NOT NULL,
    donors    bigint  NOT NULL,
    retained  bigint  NOT NULL,
    new       bigint  NOT NULL,
    compacted boolean NOT NULL DEFAULT false
);
CREATE INDEX giving_donor_tallies_read ON orders.giving_donor_tallies (tenant_id, kind, period) INCLUDE (donors, retained, new);
CREATE UNIQUE INDEX giving_donor_tallies_key ON orders.giving_donor_tallies (tenant_id, kind, period) WHERE compacted;
CREATE INDEX giving_donor_tallies_fresh ON orders.giving_donor_tallies (tenant_id) WHERE NOT compacted;

-- tally_hour is the UTC hour holding p_at (date_trunc alone would use
-- the session's zone).
-- +goose StatementBegin
CREATE FUNCTION orders.tally_hour(p_at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
    SELECT date_trunc('hour', p_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;
-- +goose StatementEnd

-- add_hour_changes inserts the differences of changed gifts, given as
-- parallel arrays: an order that counts now with sign 1, and as it
-- counted before with sign -1. Each adds its all-funds row and, from its
-- lines as they stand, one per fund.
-- +goose StatementBegin
CREATE FUNCTION orders.add_hour_changes(p_tenant uuid[], p_id uuid[], p_at timestamptz[], p_currency text[], p_net bigint[], p_sign integer[])
RETURNS void LANGUAGE sql VOLATILE AS $$
    WITH c AS (
        SELECT * FROM unnest(p_tenant, p_id, p_at, p_currency, p_net, p_sign) AS u(tenant_id, id, at, currency, net, sign)
    )
    INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor)
    SELECT tenant_id, orders.tally_hour(at), currency, fund_id, sum(gifts), sum(net)
    FROM (SELECT c.tenant_id, c.at, c.currency, '00000000-0000-0000-0000-000000000000'::uuid AS fund_id, c.sign AS gifts, c.sign * c.net AS net
          FROM c
          UNION ALL
          SELECT c.tenant_id, c.at, c.currency, d.fund_id, 0, c.sign * (d.amount_minor - d.refunded_minor)
          FROM c JOIN orders.order_donations d ON d.tenant_id = c.tenant_id AND d.order_id = c.id) x
    GROUP BY tenant_id, orders.tally_hour(at), currency, fund_id
    HAVING sum(gifts) <> 0 OR sum(net) <> 0
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION orders.giving_hours_from_orders() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM orders.add_hour_changes(array_agg(n.tenant_id), array_agg(n.id), array_agg(n.created_at), array_agg(n.currency),
                    array_agg(n.donation_subtotal_minor - n.donation_refunded_minor), array_agg(1))
        FROM new_orders n WHERE orders.gift_counts(n) HAVING count(*) > 0;
    ELSIF TG_OP = 'UPDATE' THEN
        -- Only orders whose count, date, currency or net changed.
        PERFORM orders.add_hour_changes(array_agg(x.tenant_id), array_agg(x.id), array_agg(x.at), array_agg(x.currency),
                    array_agg(x.net), array_agg(x.sign))
        FROM old_orders o
        JOIN new_orders n ON n.tenant_id = o.tenant_id AND n.id = o.id
        CROSS JOIN LATERAL (VALUES
            (o.tenant_id, o.id, o.created_at, o.currency, o.donation_subtotal_minor - o.donation_refunded_minor, -1, orders.gift_counts(o)),
            (n.tenant_id, n.id, n.created_at, n.currency, n.donation_subtotal_minor - n.donation_refunded_minor, 1, orders.gift_counts(n))
        ) x(tenant_id, id, at, currency, net, sign, counts)
        WHERE x.counts AND (orders.gift_counts(o) IS DISTINCT FROM orders.gift_counts(n) OR o.created_at <> n.created_at
            OR o.currency <> n.currency OR o.donation_subtotal_minor <> n.donation_subtotal_minor
            OR o.donation_refunded_minor <> n.donation_refunded_minor)
        HAVING count(*) > 0;
    ELSE
        PERFORM orders.add_hour_changes(array_agg(o.tenant_id), array_agg(o.id), array_agg(o.created_at), array_agg(o.currency),
                    array_agg(o.donation_subtotal_minor - o.donation_refunded_minor), array_agg(-1))
        FROM old_orders o WHERE orders.gift_counts(o) HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER orders_giving_hours_insert AFTER INSERT ON orders.orders
    REFERENCING NEW TABLE AS new_orders FOR EACH STATEMENT EXECUTE FUNCTION orders.giving_hours_from_orders();
CREATE TRIGGER orders_giving_hours_update AFTER UPDATE ON orders.orders
    REFERENCING OLD TABLE AS old_orders NEW TABLE AS new_orders FOR EACH STATEMENT EXECUTE FUNCTION orders.giving_hours_from_orders();
CREATE TRIGGER orders_giving_hours_delete AFTER DELETE ON orders.orders
    REFERENCING OLD TABLE AS old_orders FOR EACH STATEMENT EXECUTE FUNCTION orders.giving_hours_from_orders();

-- A line's share counts while its order counts (as the order stands when
-- the line changes; a change of the order itself moves its lines' shares
-- above).
-- +goose StatementBegin
CREATE FUNCTION orders.giving_hours_from_lines() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor)
        SELECT o.tenant_id, orders.tally_hour(o.created_at), o.currency, n.fund_id, 0, sum(n.amount_minor - n.refunded_minor)
        FROM new_lines n JOIN orders.orders o ON o.tenant_id = n.tenant_id AND o.id = n.order_id
        WHERE orders.gift_counts(o)
        GROUP BY 1, 2, 3, 4 HAVING sum(n.amount_minor - n.refunded_minor) <> 0;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor)
        SELECT o.tenant_id, orders.tally_hour(o.created_at), o.currency, x.fund_id, 0, sum(x.net)
        FROM old_lines p
        JOIN new_lines n ON n.tenant_id = p.tenant_id AND n.order_id = p.order_id AND n.id = p.id
        CROSS JOIN LATERAL (VALUES (p.fund_id, p.refunded_minor - p.amount_minor), (n.fund_id, n.amount_minor - n.refunded_minor)) x(fund_id, net)
        JOIN orders.orders o ON o.tenant_id = n.tenant_id AND o.id = n.order_id
        WHERE orders.gift_counts(o)
        GROUP BY 1, 2, 3, 4 HAVING sum(x.net) <> 0;
    ELSE
        INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor)
        SELECT o.tenant_id, orders.tally_hour(o.created_at), o.currency, p.fund_id, 0, -sum(p.amount_minor - p.refunded_minor)
        FROM old_lines p JOIN orders.orders o ON o.tenant_id = p.tenant_id AND o.id = p.order_id
        WHERE orders.gift_counts(o)
        GROUP BY 1, 2, 3, 4 HAVING sum(p.amount_minor - p.refunded_minor) <> 0;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER order_donations_giving_hours_insert AFTER INSERT ON orders.order_donations
    REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION orders.giving_hours_from_lines();
CREATE TRIGGER order_donations_giving_hours_update AFTER UPDATE ON orders.order_donations
    REFERENCING OLD TABLE AS old_lines NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION orders.giving_hours_from_lines();
CREATE TRIGGER order_donations_giving_hours_delete AFTER DELETE ON orders.order_donations
    REFERENCING OLD TABLE AS old_lines FOR EACH STATEMENT EXECUTE FUNCTION orders.giving_hours_from_lines();

-- giving_tallies_lock serializes the compaction and the rebuilds, which
-- would otherwise both fold the same new rows.
-- +goose StatementBegin
CREATE FUNCTION orders.giving_tallies_lock() RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('orders.giving_tallies', 0))
$$;
-- +goose StatementEnd

-- rebuild_giving_hours recomputes a tenant's hour tallies from its gifts.
-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_giving_hours(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.giving_tallies_lock();
    DELETE FROM orders.giving_hour_tallies WHERE tenant_id = p_tenant;
    INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor, compacted)
    SELECT p_tenant, hour, currency, fund_id, sum(gifts), sum(net), true
    FROM (SELECT orders.tally_hour(o.created_at) AS hour, o.currency, '00000000-0000-0000-0000-000000000000'::uuid AS fund_id,
                 1 AS gifts, o.donation_subtotal_minor - o.donation_refunded_minor AS net
          FROM orders.orders o WHERE o.tenant_id = p_tenant AND orders.gift_counts(o)
          UNION ALL
          SELECT orders.tally_hour(o.created_at), o.currency, d.fund_id, 0, d.amount_minor - d.refunded_minor
          FROM orders.orders o JOIN orders.order_donations d ON d.tenant_id = o.tenant_id AND d.order_id = o.id
          WHERE o.tenant_id = p_tenant AND orders.gift_counts(o)) x
    GROUP BY hour, currency, fund_id;
END;
$$;
-- +goose StatementEnd

-- presence_changed counts a contact appearing in (p_sign 1) or leaving
-- (-1) a period, after its rows there were written: a donor of it; a
-- retained one of it when it gave in the same period a year earlier, and
-- of the period a year later when it gave then; a new one of it when it
-- gave in no earlier period, its next period losing or regaining the
-- contact's first gift.
-- +goose StatementBegin
CREATE FUNCTION orders.presence_changed(p_tenant uuid, p_contact bigint, p_kind "char", p_period date, p_sign integer) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    later date;
BEGIN
    INSERT INTO orders.giving_donor_tallies (tenant_id, kind, period, donors, retained, new)
    SELECT p_tenant, p_kind, p_period, p_sign,
           p_sign * (EXISTS (SELECT 1 FROM orders.contact_giving_periods WHERE tenant_id = p_tenant AND kind = p_kind
                             AND period = (p_period - interval '1 year')::date AND contact_id = p_contact))::int, 0
    UNION ALL
    SELECT p_tenant, p_kind, (p_period + interval '1 year')::date, 0, p_sign, 0
    WHERE EXISTS (SELECT 1 FROM orders.contact_giving_periods WHERE tenant_id = p_tenant AND kind = p_kind
                  AND period = (p_period + interval '1 year')::date AND contact_id = p_contact);
    IF EXISTS (SELECT 1 FROM orders.contact_giving_periods WHERE tenant_id = p_tenant AND contact_id = p_contact
               AND kind = p_kind AND period < p_period) THEN
        RETURN;
    END IF;
    SELECT min(period) INTO later FROM orders.contact_giving_periods
    WHERE tenant_id = p_tenant AND contact_id = p_contact AND kind = p_kind AND period > p_period;
    INSERT INTO orders.giving_donor_tallies (tenant_id, kind, period, donors, retained, new)
    SELECT p_tenant, p_kind, p_period, 0, 0, p_sign
    UNION ALL
    SELECT p_tenant, p_kind, later, 0, 0, -p_sign WHERE later IS NOT NULL;
END;
$$;
-- +goose StatementEnd

-- rebuild_donor_tallies recomputes a tenant's donor tallies from its
-- period rows. The caller holds the tenant's giving lock exclusive.
-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_donor_tallies(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.giving_tallies_lock();
    DELETE FROM orders.giving_donor_tallies WHERE tenant_id = p_tenant;
    INSERT INTO orders.giving_donor_tallies (tenant_id, kind, period, donors, retained, new, compacted)
    SELECT p_tenant, a.kind, a.period, count(*), count(b.contact_id), count(*) FILTER (WHERE a.first), true
    FROM (SELECT DISTINCT kind, period, contact_id, period = min(period) OVER (PARTITION BY kind, contact_id) AS first
          FROM orders.contact_giving_periods WHERE tenant_id = p_tenant) a
    LEFT JOIN (SELECT DISTINCT kind, period, contact_id FROM orders.contact_giving_periods WHERE tenant_id = p_tenant) b
        ON b.kind = a.kind AND b.period = (a.period - interval '1 year')::date AND b.contact_id = a.contact_id
    GROUP BY a.kind, a.period;
END;
$$;
-- +goose StatementEnd

-- A gift's add counts the contact into the periods where it is new.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.add_period_gift(g orders.orders, cal orders.giving_rolling) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    p     record;
    r     record;
    net   bigint := g.donation_subtotal_minor - g.donation_refunded_minor;
BEGIN
    IF cal.time_zone IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO p FROM orders.local_periods(g.created_at, cal.time_zone, cal.fiscal_year_start);
    IF EXISTS (SELECT 1 FROM orders.contact_giving_periods
               WHERE tenant_id = g.tenant_id AND kind = 'm' AND period = p.m AND contact_id = g.contact_id
                 AND currency = g.currency AND rebuilt_by = pg_current_xact_id()) THEN
        RETURN;
    END IF;
    FOR r IN
        INSERT INTO orders.contact_giving_periods AS c
            (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
        VALUES (g.tenant_id, 'm', p.m, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at),
               (g.tenant_id, 'q', p.q, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at),
               (g.tenant_id, 'y', p.y, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at)
        ON CONFLICT (tenant_id, kind, period, contact_id, currency) DO UPDATE SET
            gift_count = c.gift_count + 1, net_minor = c.net_minor + EXCLUDED.net_minor,
            largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
            first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at)
        RETURNING c.kind, c.period, (c.xmax = 0) AS fresh
    LOOP
        IF r.fresh AND NOT EXISTS (SELECT 1 FROM orders.contact_giving_periods WHERE tenant_id = g.tenant_id AND kind = r.kind
                                   AND period = r.period AND contact_id = g.contact_id AND currency <> g.currency) THEN
            PERFORM orders.presence_changed(g.tenant_id, g.contact_id, r.kind, r.period, 1);
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- A rebuilt month, quarter and year count the contact in or out where
-- its presence changed.
ALTER FUNCTION orders.rebuild_contact_periods(uuid, bigint, timestamptz, orders.giving_rolling) RENAME TO rebuild_contact_periods_rows;

-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_contact_periods(p_tenant uuid, p_contact bigint, p_at timestamptz, cal orders.giving_rolling)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    p      record;
    k      record;
    before text[];
    after  text[];
BEGIN
    IF cal.time_zone IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO p FROM orders.local_periods(p_at, cal.time_zone, cal.fiscal_year_start);
    before := ARRAY(SELECT DISTINCT kind::text || period::text FROM orders.contact_giving_periods
                    WHERE tenant_id = p_tenant AND contact_id = p_contact
                      AND ((kind = 'm' AND period = p.m) OR (kind = 'q' AND period = p.q) OR (kind = 'y' AND period = p.y)));
    PERFORM orders.rebuild_contact_periods_rows(p_tenant, p_contact, p_at, cal);
    after := ARRAY(SELECT DISTINCT kind::text || period::text FROM orders.contact_giving_periods
                   WHERE tenant_id = p_tenant AND contact_id = p_contact
                     AND ((kind = 'm' AND period = p.m) OR (kind = 'q' AND period = p.q) OR (kind = 'y' AND period = p.y)));
    FOR k IN SELECT * FROM (VALUES ('m'::"char", p.m), ('q'::"char", p.q), ('y'::"char", p.y)) v(kind, period) LOOP
        IF (k.kind::text || k.period::text = ANY(after)) <> (k.kind::text || k.period::text = ANY(before)) THEN
            PERFORM orders.presence_changed(p_tenant, p_contact, k.kind, k.period,
                CASE WHEN k.kind::text || k.period::text = ANY(after) THEN 1 ELSE -1 END);
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- A whole tenant's period rows rebuilt: its donor tallies too.
ALTER FUNCTION orders.rebuild_giving_periods(uuid, orders.giving_rolling) RENAME TO rebuild_giving_periods_rows;

-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_giving_periods(p_tenant uuid, cal orders.giving_rolling) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.rebuild_giving_periods_rows(p_tenant, cal);
    PERFORM orders.rebuild_donor_tallies(p_tenant);
END;
$$;
-- +goose StatementEnd

-- An import batch counts its contacts into the periods where they are
-- new: it notes which of its (period, contact) had rows before adding.
ALTER FUNCTION orders.add_imported_gifts(uuid, uuid[]) RENAME TO add_imported_gifts_periods;

-- +goose StatementBegin
CREATE FUNCTION orders.add_imported_gifts(p_tenant uuid, p_orders uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling := orders.giving_tenant(p_tenant, true);
BEGIN
    IF cal.time_zone IS NULL THEN
        PERFORM orders.add_imported_gifts_periods(p_tenant, p_orders);
        RETURN;
    END IF;
    CREATE TEMP TABLE imported_firsts ON COMMIT DROP AS
    SELECT k.kind, c.contact_id, (SELECT min(period) FROM orders.contact_giving_periods x WHERE x.tenant_id = p_tenant
                                  AND x.contact_id = c.contact_id AND x.kind = k.kind) AS first
    FROM (SELECT DISTINCT o.contact_id FROM unnest(p_orders) AS u(id)
          CROSS JOIN LATERAL (SELECT * FROM orders.orders WHERE tenant_id = p_tenant AND id = u.id OFFSET 0) o
          WHERE orders.gift_counts(o)) c
    CROSS JOIN (VALUES ('m'::"char"), ('q'::"char"), ('y'::"char")) k(kind);
    CREATE TEMP TABLE imported_presence ON COMMIT DROP AS
    SELECT k.kind, k.period, g.contact_id, EXISTS (
               SELECT 1 FROM orders.contact_giving_periods c WHERE c.tenant_id = p_tenant AND c.kind = k.kind
                 AND c.period = k.period AND c.contact_id = g.contact_id) AS present
    FROM (SELECT DISTINCT o.contact_id, p.m, p.q, p.y
          FROM unnest(p_orders) AS u(id)
          CROSS JOIN LATERAL (SELECT * FROM orders.orders WHERE tenant_id = p_tenant AND id = u.id OFFSET 0) o
          CROSS JOIN LATERAL orders.local_periods(o.created_at, cal.time_zone, cal.fiscal_year_start) p
          WHERE orders.gift_counts(o)) g
    CROSS JOIN LATERAL (VALUES ('m'::"char", g.m), ('q'::"char", g.q), ('y'::"char", g.y)) k(kind, period)
    GROUP BY k.kind, k.period, g.contact_id;
    PERFORM orders.add_imported_gifts_periods(p_tenant, p_orders);
    -- A pair new in the batch is a new donor of its period; retained when
    -- the contact gave a year earlier; and it retains the contact in the
    -- period a year later unless that pair is new too (it counts itself).
    INSERT INTO orders.giving_donor_tallies (tenant_id, kind, period, donors, retained, new)
    SELECT p_tenant, x.kind, x.period, sum(x.donors), sum(x.retained), sum(x.new)
    FROM (SELECT n.kind, n.period, 1 AS donors, (EXISTS (SELECT 1 FROM orders.contact_giving_periods c
                 WHERE c.tenant_id = p_tenant AND c.kind = n.kind AND c.period = (n.period - interval '1 year')::date
                   AND c.contact_id = n.contact_id))::int AS retained, 0 AS new
          FROM imported_presence n WHERE NOT n.present
          UNION ALL
          SELECT n.kind, (n.period + interval '1 year')::date, 0, 1, 0
          FROM imported_presence n
          WHERE NOT n.present
            AND EXISTS (SELECT 1 FROM orders.contact_giving_periods c WHERE c.tenant_id = p_tenant AND c.kind = n.kind
                        AND c.period = (n.period + interval '1 year')::date AND c.contact_id = n.contact_id)
            AND NOT EXISTS (SELECT 1 FROM imported_presence m WHERE m.kind = n.kind AND m.contact_id = n.contact_id
                            AND m.period = (n.period + interval '1 year')::date AND NOT m.present)
          -- A contact's first period moved earlier (or it is new): the
          -- new one gains it, the old one loses it.
          UNION ALL
          SELECT f.kind, now_first.period, 0, 0, 1
          FROM imported_firsts f
          CROSS JOIN LATERAL (SELECT min(period) AS period FROM orders.contact_giving_periods x WHERE x.tenant_id = p_tenant
                              AND x.contact_id = f.contact_id AND x.kind = f.kind) now_first
          WHERE now_first.period IS DISTINCT FROM f.first
          UNION ALL
          SELECT f.kind, f.first, 0, 0, -1
          FROM imported_firsts f
          CROSS JOIN LATERAL (SELECT min(period) AS period FROM orders.contact_giving_periods x WHERE x.tenant_id = p_tenant
                              AND x.contact_id = f.contact_id AND x.kind = f.kind) now_first
          WHERE f.first IS NOT NULL AND now_first.period IS DISTINCT FROM f.first) x
    GROUP BY x.kind, x.period;
    DROP TABLE imported_presence;
    DROP TABLE imported_firsts;
END;
$$;
-- +goose StatementEnd

-- The bulk rebuild rebuilds the hour tallies too.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_contact_giving(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling := orders.giving_tenant(p_tenant, true);
BEGIN
    PERFORM orders.rebuild_contact_giving_rows(p_tenant);
    PERFORM orders.set_giving_recent(p_tenant, NULL, cal.from_at);
    PERFORM orders.rebuild_giving_periods(p_tenant, cal);
    PERFORM orders.rebuild_giving_hours(p_tenant);
END;
$$;
-- +goose StatementEnd

-- compact_giving_tallies folds the new rows of both tables into their
-- keys' compacted rows, in one transaction: a reader sees the new rows or
-- their sum, never both.
-- +goose StatementBegin
CREATE FUNCTION orders.compact_giving_tallies() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n bigint;
    m bigint;
BEGIN
    PERFORM orders.giving_tallies_lock();
    WITH fresh AS (
        DELETE FROM orders.giving_hour_tallies WHERE NOT compacted
        RETURNING tenant_id, hour, currency, fund_id, gifts, net_minor
    ), folded AS (
        INSERT INTO orders.giving_hour_tallies AS t (tenant_id, hour, currency, fund_id, gifts, net_minor, compacted)
        SELECT tenant_id, hour, currency, fund_id, sum(gifts), sum(net_minor), true FROM fresh
        GROUP BY tenant_id, hour, currency, fund_id
        ON CONFLICT (tenant_id, hour, currency, fund_id) WHERE compacted DO UPDATE SET
            gifts = t.gifts + EXCLUDED.gifts, net_minor = t.net_minor + EXCLUDED.net_minor
        RETURNING 1
    ) SELECT (SELECT count(*) FROM fresh) INTO n;
    WITH fresh AS (
        DELETE FROM orders.giving_donor_tallies WHERE NOT compacted
        RETURNING tenant_id, kind, period, donors, retained, new
    ), folded AS (
        INSERT INTO orders.giving_donor_tallies AS t (tenant_id, kind, period, donors, retained, new, compacted)
        SELECT tenant_id, kind, period, sum(donors), sum(retained), sum(new), true FROM fresh
        GROUP BY tenant_id, kind, period
        ON CONFLICT (tenant_id, kind, period) WHERE compacted DO UPDATE SET
            donors = t.donors + EXCLUDED.donors, retained = t.retained + EXCLUDED.retained, new = t.new + EXCLUDED.new
        RETURNING 1
    ) SELECT (SELECT count(*) FROM fresh) INTO m;
    RETURN n + m;
END;
$$;
-- +goose StatementEnd

-- Every tenant's tallies from what it has.
SELECT orders.rebuild_giving_hours(t.tenant_id) FROM (SELECT DISTINCT tenant_id FROM orders.orders WHERE has_donations) t;
SELECT orders.rebuild_donor_tallies(tenant_id) FROM orders.giving_rolling WHERE time_zone IS NOT NULL;

-- What the reports service reads.
CREATE VIEW orders.report_giving_hours_v1 AS
SELECT tenant_id, hour, currency, fund_id, gifts, net_minor FROM orders.giving_hour_tallies;

CREATE VIEW orders.report_giving_donors_v1 AS
SELECT tenant_id, kind, period, donors, retained, new FROM orders.giving_donor_tallies;

CREATE VIEW orders.report_funds_v1 AS
SELECT tenant_id, id AS fund_id, name FROM orders.funds;

-- +goose Down
-- Forward-only, like every migration here (DESIGN.md).
