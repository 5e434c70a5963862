-- +goose Up
-- Giving per contact and tenant-local period (issue 34, docs/cohorts.md,
-- "Local periods"): what each contact gave in each of its tenant's
-- calendar months, fiscal quarters and fiscal years, counted in the
-- tenant's time zone. A dashboard's period and a cohort's fiscal-year
-- window are then one range of rows per period, in contact order, instead
-- of every gift of the period hashed into donor sets (a fiscal year at
-- 3,000,000 gifts: ≈ 750,000 gifts a period, 4-5 s).
--
-- The calendar is the auth service's (the tenant settings' timeZone and
-- fiscalYearStartMonth). orders keeps a copy on the tenant's giving row
-- (orders.giving_rolling), which its housekeeping refreshes from the
-- settings; a changed copy rebuilds the tenant's period rows in one
-- transaction (orders.set_giving_calendar). Until a tenant has a copy, no
-- period rows are kept for it. Readers use the rows only when the copy is
-- the calendar they read themselves, and the gifts otherwise.
--
-- A row per (kind, period, contact, currency): kind 'm' a local month,
-- 'q' a quarter of the fiscal year, 'y' a fiscal year; period its first
-- day. Kept as the UTC months are (00021-00024): a new gift adds to its
-- three rows; a refund, void or move rebuilds its contact's local month
-- from the gifts and the quarter and year from the months, marking the
-- month rows so that an add queued after it in the same transaction does
-- nothing.
ALTER TABLE orders.giving_rolling
    ADD COLUMN time_zone           text,
    ADD COLUMN fiscal_year_start   smallint CHECK (fiscal_year_start BETWEEN 1 AND 12),
    ADD COLUMN calendar_checked_at timestamptz;

CREATE TABLE orders.contact_giving_periods (
    tenant_id     uuid        NOT NULL,
    kind          "char"      NOT NULL CHECK (kind IN ('m', 'q', 'y')),
    period        date        NOT NULL,
    contact_id    bigint      NOT NULL,
    currency      text        NOT NULL,
    gift_count    integer     NOT NULL,
    net_minor     bigint      NOT NULL,
    largest_minor bigint      NOT NULL,
    first_at      timestamptz NOT NULL,
    last_at       timestamptz NOT NULL,
    rebuilt_by    xid8,
    -- A period's totals and donors are read from this index alone.
    PRIMARY KEY (tenant_id, kind, period, contact_id, currency) INCLUDE (gift_count, net_minor)
) WITH (fillfactor = 90);
CREATE INDEX contact_giving_periods_contact ON orders.contact_giving_periods (tenant_id, contact_id, kind, period);

-- fiscal_periods are the fiscal quarter and fiscal year that hold the
-- month starting p_month, for a fiscal year starting in month p_fy.
-- +goose StatementBegin
CREATE FUNCTION orders.fiscal_periods(p_month date, p_fy smallint, OUT q date, OUT y date)
LANGUAGE sql IMMUTABLE AS $$
    SELECT (fy + make_interval(months => ((extract(month FROM p_month)::int - p_fy + 12) % 12) / 3 * 3))::date, fy
    FROM (SELECT make_date(extract(year FROM p_month)::int - CASE WHEN extract(month FROM p_month)::int < p_fy THEN 1 ELSE 0 END,
                           p_fy, 1) AS fy) f
$$;
-- +goose StatementEnd

-- local_periods are the local month, fiscal quarter and fiscal year that
-- hold the instant p_at in zone p_zone.
-- +goose StatementBegin
CREATE FUNCTION orders.local_periods(p_at timestamptz, p_zone text, p_fy smallint, OUT m date, OUT q date, OUT y date)
LANGUAGE sql STABLE AS $$
    SELECT l.m, f.q, f.y
    FROM (SELECT date_trunc('month', p_at AT TIME ZONE p_zone)::date AS m) l
    CROSS JOIN LATERAL orders.fiscal_periods(l.m, p_fy) f
$$;
-- +goose StatementEnd

-- giving_tenant takes the tenant's giving lock (shared for a trigger,
-- exclusive for a writer of many contacts' rows at once) and returns its
-- giving row: the rolling window's start and the calendar copy. It starts
-- the row, window at today's target and no calendar, for a tenant's first
-- gift.
-- +goose StatementBegin
CREATE FUNCTION orders.giving_tenant(p_tenant uuid, p_exclusive boolean) RETURNS orders.giving_rolling
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    k bigint := hashtextextended('orders.giving_rolling:' || p_tenant::text, 0);
    r orders.giving_rolling;
BEGIN
    IF p_exclusive THEN
        PERFORM pg_advisory_xact_lock(k);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(k);
    END IF;
    SELECT * INTO r FROM orders.giving_rolling WHERE tenant_id = p_tenant;
    IF NOT FOUND THEN
        INSERT INTO orders.giving_rolling (tenant_id, from_at) VALUES (p_tenant, orders.rolling_target(now()))
        ON CONFLICT (tenant_id) DO NOTHING;
        SELECT * INTO r FROM orders.giving_rolling WHERE tenant_id = p_tenant;
    END IF;
    RETURN r;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.giving_rolling_lock(p_tenant uuid, p_exclusive boolean) RETURNS timestamptz
LANGUAGE sql VOLATILE AS $$
    SELECT (orders.giving_tenant(p_tenant, p_exclusive)).from_at
$$;
-- +goose StatementEnd

-- add_period_gift adds a new gift to its contact's three period rows,
-- unless its local month was rebuilt by this transaction (which counted
-- it). The caller holds the contact's lock.
-- +goose StatementBegin
CREATE FUNCTION orders.add_period_gift(g orders.orders, cal orders.giving_rolling) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    p   record;
    net bigint := g.donation_subtotal_minor - g.donation_refunded_minor;
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
    INSERT INTO orders.contact_giving_periods AS c
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    VALUES (g.tenant_id, 'm', p.m, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at),
           (g.tenant_id, 'q', p.q, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at),
           (g.tenant_id, 'y', p.y, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at)
    ON CONFLICT (tenant_id, kind, period, contact_id, currency) DO UPDATE SET
        gift_count = c.gift_count + 1, net_minor = c.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
        first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at);
END;
$$;
-- +goose StatementEnd

-- rebuild_contact_periods rebuilds one contact's local month holding
-- p_at from its gifts, marked as rebuilt by this transaction, and the
-- fiscal quarter and year holding it from its months. The caller holds
-- the contact's lock.
-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_contact_periods(p_tenant uuid, p_contact bigint, p_at timestamptz, cal orders.giving_rolling)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    z  text := cal.time_zone;
    p  record;
    mf timestamptz;
    mt timestamptz;
BEGIN
    IF z IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO p FROM orders.local_periods(p_at, z, cal.fiscal_year_start);
    mf := p.m::timestamp AT TIME ZONE z;
    mt := (p.m + interval '1 month') AT TIME ZONE z;
    DELETE FROM orders.contact_giving_periods
    WHERE tenant_id = p_tenant AND contact_id = p_contact
      AND ((kind = 'm' AND period = p.m) OR (kind = 'q' AND period = p.q) OR (kind = 'y' AND period = p.y));
    INSERT INTO orders.contact_giving_periods
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at, rebuilt_by)
    SELECT p_tenant, 'm', p.m, p_contact, o.currency, count(*), sum(o.net), max(o.net), min(o.created_at), max(o.created_at),
           pg_current_xact_id()
    FROM (SELECT currency, created_at, donation_subtotal_minor - donation_refunded_minor AS net
          FROM orders.orders
          WHERE tenant_id = p_tenant AND contact_id = p_contact AND has_donations
            AND status IN ('Completed', 'PartiallyRefunded') AND created_at >= mf AND created_at < mt) o
    WHERE o.net > 0
    GROUP BY o.currency;
    INSERT INTO orders.contact_giving_periods
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, k.kind, k.period, p_contact, c.currency, sum(c.gift_count), sum(c.net_minor), max(c.largest_minor),
           min(c.first_at), max(c.last_at)
    FROM (VALUES ('q'::"char", p.q, 3), ('y'::"char", p.y, 12)) k(kind, period, months)
    JOIN orders.contact_giving_periods c ON c.tenant_id = p_tenant AND c.contact_id = p_contact AND c.kind = 'm'
        AND c.period >= k.period AND c.period < k.period + make_interval(months => k.months)
    GROUP BY k.kind, k.period, c.currency;
END;
$$;
-- +goose StatementEnd

-- rebuild_giving_periods rebuilds all of a tenant's period rows for the
-- calendar cal, set-based (none when it has no calendar). The caller
-- holds the tenant's lock exclusive.
-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_giving_periods(p_tenant uuid, cal orders.giving_rolling) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM orders.contact_giving_periods WHERE tenant_id = p_tenant;
    IF cal.time_zone IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO orders.contact_giving_periods
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, 'm', o.m, o.contact_id, o.currency, count(*), sum(o.net), max(o.net), min(o.created_at), max(o.created_at)
    FROM (SELECT contact_id, currency, created_at, date_trunc('month', created_at AT TIME ZONE cal.time_zone)::date AS m,
                 donation_subtotal_minor - donation_refunded_minor AS net
          FROM orders.orders
          WHERE tenant_id = p_tenant AND has_donations AND status IN ('Completed', 'PartiallyRefunded')) o
    WHERE o.net > 0
    GROUP BY o.m, o.contact_id, o.currency;
    INSERT INTO orders.contact_giving_periods
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, k.kind, k.period, c.contact_id, c.currency, sum(c.gift_count), sum(c.net_minor), max(c.largest_minor),
           min(c.first_at), max(c.last_at)
    FROM orders.contact_giving_periods c
    CROSS JOIN LATERAL orders.fiscal_periods(c.period, cal.fiscal_year_start) f
    CROSS JOIN LATERAL (VALUES ('q'::"char", f.q), ('y'::"char", f.y)) k(kind, period)
    WHERE c.tenant_id = p_tenant AND c.kind = 'm'
    GROUP BY k.kind, k.period, c.contact_id, c.currency;
END;
$$;
-- +goose StatementEnd

-- set_giving_calendar sets the tenant's calendar copy, checked at p_at,
-- and, when it changed, rebuilds its period rows in the same transaction, holding the
-- tenant's lock exclusive: the tenant's gifts wait at their commit until
-- it is done. A zone PostgreSQL does not know is refused before anything
-- is written (every later gift would fail on it).
-- +goose StatementBegin
CREATE FUNCTION orders.set_giving_calendar(p_tenant uuid, p_zone text, p_fy smallint, p_at timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling;
BEGIN
    PERFORM now() AT TIME ZONE p_zone;
    cal := orders.giving_tenant(p_tenant, true);
    IF cal.time_zone IS NOT DISTINCT FROM p_zone AND cal.fiscal_year_start IS NOT DISTINCT FROM p_fy THEN
        UPDATE orders.giving_rolling SET calendar_checked_at = p_at WHERE tenant_id = p_tenant;
        RETURN false;
    END IF;
    UPDATE orders.giving_rolling SET time_zone = p_zone, fiscal_year_start = p_fy, calendar_checked_at = p_at
    WHERE tenant_id = p_tenant
    RETURNING * INTO cal;
    PERFORM orders.rebuild_giving_periods(p_tenant, cal);
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- The adds and rebuilds of 00023-00024 keep the period rows too: each is
-- wrapped, not copied.
ALTER FUNCTION orders.add_contact_gift(orders.orders) RENAME TO add_contact_gift_rows;

-- +goose StatementBegin
CREATE FUNCTION orders.add_contact_gift(g orders.orders) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.add_contact_gift_rows(g);
    PERFORM orders.add_period_gift(g, orders.giving_tenant(g.tenant_id, false));
END;
$$;
-- +goose StatementEnd

ALTER FUNCTION orders.rebuild_contact_month(uuid, bigint, timestamptz) RENAME TO rebuild_contact_month_rows;

-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_contact_month(p_tenant uuid, p_contact bigint, p_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.rebuild_contact_month_rows(p_tenant, p_contact, p_at);
    PERFORM orders.rebuild_contact_periods(p_tenant, p_contact, p_at, orders.giving_tenant(p_tenant, false));
END;
$$;
-- +goose StatementEnd

-- A gift whose date moves within its UTC month may still change local
-- month: any move of date or contact rebuilds where the gift was.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.contact_giving_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NOT orders.gift_counts(OLD) THEN
        -- Nothing of this gift is in the summaries: it can only add.
        IF orders.gift_counts(NEW) THEN
            PERFORM orders.add_contact_gift(NEW);
        END IF;
        RETURN NULL;
    END IF;
    IF OLD.contact_id <> NEW.contact_id OR OLD.created_at <> NEW.created_at THEN
        PERFORM orders.rebuild_contact_month(OLD.tenant_id, OLD.contact_id, OLD.created_at);
    END IF;
    PERFORM orders.rebuild_contact_month(NEW.tenant_id, NEW.contact_id, NEW.created_at);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

ALTER FUNCTION orders.add_imported_gifts(uuid, uuid[]) RENAME TO add_imported_gifts_rows;

-- An import's batch adds to the period rows set-based, under the lock
-- add_imported_gifts_rows holds exclusive.
-- +goose StatementBegin
CREATE FUNCTION orders.add_imported_gifts(p_tenant uuid, p_orders uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling;
BEGIN
    PERFORM orders.add_imported_gifts_rows(p_tenant, p_orders);
    cal := orders.giving_tenant(p_tenant, true);
    IF cal.time_zone IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO orders.contact_giving_periods AS c
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, k.kind, k.period, g.contact_id, g.currency, count(*), sum(g.net), max(g.net), min(g.created_at), max(g.created_at)
    FROM (SELECT o.contact_id, o.currency, o.created_at, o.donation_subtotal_minor - o.donation_refunded_minor AS net
          FROM unnest(p_orders) AS u(id)
          CROSS JOIN LATERAL (SELECT * FROM orders.orders WHERE tenant_id = p_tenant AND id = u.id OFFSET 0) o
          WHERE o.has_donations AND o.status IN ('Completed', 'PartiallyRefunded')) g
    CROSS JOIN LATERAL orders.local_periods(g.created_at, cal.time_zone, cal.fiscal_year_start) p
    CROSS JOIN LATERAL (VALUES ('m'::"char", p.m), ('q'::"char", p.q), ('y'::"char", p.y)) k(kind, period)
    WHERE g.net > 0
    GROUP BY k.kind, k.period, g.contact_id, g.currency
    ON CONFLICT (tenant_id, kind, period, contact_id, currency) DO UPDATE SET
        gift_count = c.gift_count + EXCLUDED.gift_count, net_minor = c.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
        first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at);
END;
$$;
-- +goose StatementEnd

-- The bulk rebuild rebuilds the period rows too, for the calendar copy.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_contact_giving(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling := orders.giving_tenant(p_tenant, true);
BEGIN
    PERFORM orders.rebuild_contact_giving_rows(p_tenant);
    PERFORM orders.set_giving_recent(p_tenant, NULL, cal.from_at);
    PERFORM orders.rebuild_giving_periods(p_tenant, cal);
END;
$$;
-- +goose StatementEnd

-- What the reports service reads: the calendar the rows were kept for,
-- and the rows.
CREATE OR REPLACE VIEW orders.report_giving_rolling_v1 AS
SELECT tenant_id, from_at, time_zone, fiscal_year_start FROM orders.giving_rolling;

CREATE VIEW orders.report_contact_giving_periods_v1 AS
SELECT tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at
FROM orders.contact_giving_periods;

-- +goose Down
-- Forward-only, like every migration here (DESIGN.md).
