-- +goose Up
-- A tenant's giving counted once per hour, not per gift (issue 34,
-- docs/dashboard.md, "Session 14"): a fiscal year's dashboard read
-- ≈ 550,000 period rows per period at 3,000,000 gifts, about a second;
-- these rows and 00027's donor tallies answer it from a few thousand.
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
-- Append-only, as 00027's donor tallies: a writer inserts its
-- differences and never updates a row, so concurrent gifts never wait
-- for each other here. The orders housekeeping folds the new rows of both
-- into one compacted row per key (orders.compact_giving_tallies); a
-- reader sums both.
CREATE TABLE orders.giving_hour_tallies (
    -- A key of its own: the rows are differences, many per period.
    id        bigint      GENERATED ALWAYS AS IDENTITY,
    tenant_id uuid        NOT NULL,
    hour      timestamptz NOT NULL,
    currency  text        NOT NULL,
    fund_id   uuid        NOT NULL,
    gifts     bigint      NOT NULL,
    net_minor bigint      NOT NULL,
    compacted boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX giving_hour_tallies_read ON orders.giving_hour_tallies (tenant_id, hour) INCLUDE (currency, fund_id, gifts, net_minor);
CREATE UNIQUE INDEX giving_hour_tallies_key ON orders.giving_hour_tallies (tenant_id, hour, currency, fund_id) WHERE compacted;
CREATE INDEX giving_hour_tallies_fresh ON orders.giving_hour_tallies (tenant_id) WHERE NOT compacted;

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
          SELECT c.tenant_id, c.at, c.currency, d.fund_id, 0, c.sign * d.net
          FROM c
          CROSS JOIN LATERAL (SELECT fund_id, amount_minor - refunded_minor AS net FROM orders.order_donations
                              WHERE tenant_id = c.tenant_id AND order_id = c.id OFFSET 0) d) x
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
        -- What the statement's orders counted before, taken off, and what
        -- they count now, added: differences that cancel are dropped by
        -- add_hour_changes. Not pairing old and new rows: a join of two
        -- transition tables, which have no statistics, was planned as a
        -- nested loop (5,000 rows each: 153 s).
        PERFORM orders.add_hour_changes(array_agg(x.tenant_id), array_agg(x.id), array_agg(x.at), array_agg(x.currency),
                    array_agg(x.net), array_agg(x.sign))
        FROM (SELECT o.tenant_id, o.id, o.created_at AS at, o.currency, o.donation_subtotal_minor - o.donation_refunded_minor AS net, -1 AS sign
              FROM old_orders o WHERE orders.gift_counts(o)
              UNION ALL
              SELECT n.tenant_id, n.id, n.created_at, n.currency, n.donation_subtotal_minor - n.donation_refunded_minor, 1
              FROM new_orders n WHERE orders.gift_counts(n)) x
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

-- add_line_changes inserts the differences of changed lines, given as
-- parallel arrays (a line's net as it is, or taken off as it was): a
-- line's share counts while its order counts, as the order stands when
-- the line changes (a change of the order itself moves its lines' shares
-- above). Each line fetches its order by its primary key (LATERAL …
-- OFFSET 0) and only then asks whether it counts: a join left to the
-- planner may hash every order of the database, and a probe that carried
-- the counting test chose the partial index of counted gifts by tenant
-- alone (90,000 rows read a line: 40 s a batch of 5,000).
-- +goose StatementBegin
CREATE FUNCTION orders.add_line_changes(p_tenant uuid[], p_order uuid[], p_fund uuid[], p_net bigint[]) RETURNS void
LANGUAGE sql VOLATILE AS $$
    INSERT INTO orders.giving_hour_tallies (tenant_id, hour, currency, fund_id, gifts, net_minor)
    SELECT o.tenant_id, orders.tally_hour(o.created_at), o.currency, l.fund_id, 0, sum(l.net)
    FROM unnest(p_tenant, p_order, p_fund, p_net) AS l(tenant_id, order_id, fund_id, net)
    CROSS JOIN LATERAL (SELECT x AS g FROM orders.orders x WHERE x.tenant_id = l.tenant_id AND x.id = l.order_id OFFSET 0) p
    CROSS JOIN LATERAL (SELECT (p.g).tenant_id, (p.g).created_at, (p.g).currency WHERE orders.gift_counts(p.g)) o
    GROUP BY 1, 2, 3, 4 HAVING sum(l.net) <> 0
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION orders.giving_hours_from_lines() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM orders.add_line_changes(array_agg(tenant_id), array_agg(order_id), array_agg(fund_id),
                    array_agg(amount_minor - refunded_minor))
        FROM new_lines HAVING count(*) > 0;
    ELSIF TG_OP = 'UPDATE' THEN
        -- The lines as they were, taken off, and as they are, added (not
        -- paired: see giving_hours_from_orders).
        PERFORM orders.add_line_changes(array_agg(l.tenant_id), array_agg(l.order_id), array_agg(l.fund_id), array_agg(l.net))
        FROM (SELECT tenant_id, order_id, fund_id, refunded_minor - amount_minor AS net FROM old_lines
              UNION ALL
              SELECT tenant_id, order_id, fund_id, amount_minor - refunded_minor FROM new_lines) l
        HAVING count(*) > 0;
    ELSE
        PERFORM orders.add_line_changes(array_agg(tenant_id), array_agg(order_id), array_agg(fund_id),
                    array_agg(refunded_minor - amount_minor))
        FROM old_lines HAVING count(*) > 0;
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

-- What the reports service reads.
CREATE VIEW orders.report_giving_hours_v1 AS
SELECT tenant_id, hour, currency, fund_id, gifts, net_minor FROM orders.giving_hour_tallies;

CREATE VIEW orders.report_funds_v1 AS
SELECT tenant_id, id AS fund_id, name FROM orders.funds;

-- +goose Down
-- Forward-only, like every migration here (DESIGN.md).
