-- +goose Up
-- A new calendar's period rows are built a range of contacts at a time
-- (issue 34, docs/cohorts.md, "A calendar change is built in steps").
--
-- 00027 rebuilt a tenant's period rows for a changed calendar, and after a
-- bulk import, in one transaction holding the tenant's giving lock
-- exclusive: at 1,000,000 contacts for 2-5 minutes, during which every
-- gift of the tenant waited at its commit (and a request's deadline ran
-- out first). Now a change only starts a build (orders.start_giving_calendar):
-- the copy is dropped at once, so readers read the gifts as they do during
-- a bulk import, and the tenant's donor tallies are emptied. The
-- housekeeping then builds the rows in steps (orders.build_giving_periods),
-- each a range of contacts in id order in its own short transaction holding
-- the lock; periods_through is the last contact built. Writers keep the
-- rows of the contacts built so far in the new calendar, the tallies with
-- them (each contact's presence in its periods is its own), and leave the
-- others to their step, which reads their gifts from the orders after
-- every gift committed before it. The last step sets the copy: from then
-- on readers use the rows.
ALTER TABLE orders.giving_rolling
    ADD COLUMN periods_zone    text,
    ADD COLUMN periods_fy      smallint CHECK (periods_fy BETWEEN 1 AND 12),
    ADD COLUMN periods_through bigint;

-- period_calendar is the calendar in which a writer keeps contact
-- p_contact's period rows: the copy; while a build runs, the one being
-- built for the contacts it has built; none (time_zone NULL) otherwise.
-- +goose StatementBegin
CREATE FUNCTION orders.period_calendar(cal orders.giving_rolling, p_contact bigint) RETURNS orders.giving_rolling
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF cal.time_zone IS NULL AND cal.periods_zone IS NOT NULL AND p_contact <= cal.periods_through THEN
        cal.time_zone := cal.periods_zone;
        cal.fiscal_year_start := cal.periods_fy;
    END IF;
    RETURN cal;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.add_contact_gift(g orders.orders) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.add_contact_gift_rows(g);
    PERFORM orders.add_period_gift(g, orders.period_calendar(orders.giving_tenant(g.tenant_id, false), g.contact_id));
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_contact_month(p_tenant uuid, p_contact bigint, p_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.rebuild_contact_month_rows(p_tenant, p_contact, p_at);
    PERFORM orders.rebuild_contact_periods(p_tenant, p_contact, p_at,
        orders.period_calendar(orders.giving_tenant(p_tenant, false), p_contact));
END;
$$;
-- +goose StatementEnd

-- build_range_period_rows writes the period rows of the contacts in
-- (p_lo, p_hi] from their gifts, for the calendar cal, after deleting
-- what they had. The caller holds the tenant's lock exclusive.
-- +goose StatementBegin
CREATE FUNCTION orders.build_range_period_rows(p_tenant uuid, p_lo bigint, p_hi bigint, cal orders.giving_rolling) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    DELETE FROM orders.contact_giving_periods WHERE tenant_id = p_tenant AND contact_id > p_lo AND contact_id <= p_hi;
    IF cal.time_zone IS NULL THEN
        RETURN;
    END IF;
    -- The quarters and years are summed from the months as written (the
    -- statement's RETURNING), not read back from the table.
    WITH m AS (
        INSERT INTO orders.contact_giving_periods
            (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
        SELECT p_tenant, 'm', o.m, o.contact_id, o.currency, count(*), sum(o.net), max(o.net), min(o.created_at), max(o.created_at)
        FROM (SELECT contact_id, currency, created_at, date_trunc('month', created_at AT TIME ZONE cal.time_zone)::date AS m,
                     donation_subtotal_minor - donation_refunded_minor AS net
              FROM orders.orders
              WHERE tenant_id = p_tenant AND contact_id > p_lo AND contact_id <= p_hi
                AND has_donations AND status IN ('Completed', 'PartiallyRefunded')) o
        WHERE o.net > 0
        GROUP BY o.m, o.contact_id, o.currency
        RETURNING period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    INSERT INTO orders.contact_giving_periods
        (tenant_id, kind, period, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, k.kind, k.period, m.contact_id, m.currency, sum(m.gift_count), sum(m.net_minor), max(m.largest_minor),
           min(m.first_at), max(m.last_at)
    FROM m
    CROSS JOIN LATERAL orders.fiscal_periods(m.period, cal.fiscal_year_start) f
    CROSS JOIN LATERAL (VALUES ('q'::"char", f.q), ('y'::"char", f.y)) k(kind, period)
    GROUP BY k.kind, k.period, m.contact_id, m.currency;
END;
$$;
-- +goose StatementEnd

-- add_range_donor_tallies adds the contacts in (p_lo, p_hi] to the donor
-- tallies of the periods where they have rows: a donor of each, retained
-- where they have the period a year earlier too, new in their first. A
-- contact's contribution depends on its own rows alone, so ranges add up.
-- +goose StatementBegin
CREATE FUNCTION orders.add_range_donor_tallies(p_tenant uuid, p_lo bigint, p_hi bigint, p_compacted boolean) RETURNS void
LANGUAGE sql VOLATILE AS $$
    INSERT INTO orders.giving_donor_tallies (tenant_id, kind, period, donors, retained, new, compacted)
    SELECT p_tenant, a.kind, a.period, count(*), count(b.contact_id), count(*) FILTER (WHERE a.first), p_compacted
    FROM (SELECT DISTINCT kind, period, contact_id, period = min(period) OVER (PARTITION BY kind, contact_id) AS first
          FROM orders.contact_giving_periods WHERE tenant_id = p_tenant AND contact_id > p_lo AND contact_id <= p_hi) a
    LEFT JOIN (SELECT DISTINCT kind, period, contact_id FROM orders.contact_giving_periods
               WHERE tenant_id = p_tenant AND contact_id > p_lo AND contact_id <= p_hi) b
        ON b.kind = a.kind AND b.period = (a.period - interval '1 year')::date AND b.contact_id = a.contact_id
    GROUP BY a.kind, a.period
$$;
-- +goose StatementEnd

-- The whole-tenant rebuilds (rebuild_contact_giving, set_giving_calendar)
-- are the range functions over every contact, and finish a build that is
-- running: the rows they write are complete.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_giving_period_rows(p_tenant uuid, cal orders.giving_rolling) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT orders.build_range_period_rows(p_tenant, -9223372036854775808, 9223372036854775807, cal)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_donor_tallies(p_tenant uuid) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM orders.giving_tallies_lock();
    DELETE FROM orders.giving_donor_tallies WHERE tenant_id = p_tenant;
    PERFORM orders.add_range_donor_tallies(p_tenant, -9223372036854775808, 9223372036854775807, true);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.rebuild_giving_periods(p_tenant uuid, cal orders.giving_rolling) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF cal.periods_zone IS NOT NULL THEN
        UPDATE orders.giving_rolling SET time_zone = periods_zone, fiscal_year_start = periods_fy,
            periods_zone = NULL, periods_fy = NULL, periods_through = NULL
        WHERE tenant_id = p_tenant
        RETURNING * INTO cal;
    END IF;
    PERFORM orders.rebuild_giving_period_rows(p_tenant, cal);
    PERFORM orders.rebuild_donor_tallies(p_tenant);
END;
$$;
-- +goose StatementEnd

-- set_giving_calendar (00027) stays the one-transaction rebuild, for
-- tools and tests that need the rows at once; it ends a running build.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.set_giving_calendar(p_tenant uuid, p_zone text, p_fy smallint, p_at timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling;
BEGIN
    PERFORM now() AT TIME ZONE p_zone;
    cal := orders.giving_tenant(p_tenant, true);
    IF cal.time_zone IS NOT DISTINCT FROM p_zone AND cal.fiscal_year_start IS NOT DISTINCT FROM p_fy AND cal.periods_zone IS NULL THEN
        UPDATE orders.giving_rolling SET calendar_checked_at = p_at WHERE tenant_id = p_tenant;
        RETURN false;
    END IF;
    UPDATE orders.giving_rolling SET time_zone = p_zone, fiscal_year_start = p_fy, calendar_checked_at = p_at,
        periods_resume_at = NULL, periods_zone = NULL, periods_fy = NULL, periods_through = NULL
    WHERE tenant_id = p_tenant
    RETURNING * INTO cal;
    PERFORM orders.rebuild_giving_periods(p_tenant, cal);
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- start_giving_calendar is how the housekeeping moves a tenant to the
-- calendar (p_zone, p_fy), checked at p_at: it drops the copy, so that
-- readers read the gifts, empties the tenant's donor tallies and starts a
-- build, which build_giving_periods carries out. It reports whether it
-- started one: not when the copy is that calendar or a build of it runs.
-- A zone PostgreSQL does not know is refused before anything is written.
-- +goose StatementBegin
CREATE FUNCTION orders.start_giving_calendar(p_tenant uuid, p_zone text, p_fy smallint, p_at timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling;
BEGIN
    PERFORM now() AT TIME ZONE p_zone;
    cal := orders.giving_tenant(p_tenant, true);
    IF (cal.periods_zone IS NULL AND cal.time_zone IS NOT DISTINCT FROM p_zone AND cal.fiscal_year_start IS NOT DISTINCT FROM p_fy)
       OR (cal.periods_zone IS NOT DISTINCT FROM p_zone AND cal.periods_fy IS NOT DISTINCT FROM p_fy) THEN
        UPDATE orders.giving_rolling SET calendar_checked_at = p_at WHERE tenant_id = p_tenant;
        RETURN false;
    END IF;
    UPDATE orders.giving_rolling SET time_zone = NULL, fiscal_year_start = NULL, calendar_checked_at = p_at,
        periods_resume_at = NULL, periods_zone = p_zone, periods_fy = p_fy, periods_through = NULL
    WHERE tenant_id = p_tenant;
    PERFORM orders.giving_tallies_lock();
    DELETE FROM orders.giving_donor_tallies WHERE tenant_id = p_tenant;
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- build_giving_periods is one step of the tenant's build: the period rows
-- and donor tallies of its next p_contacts contacts with gifts, in id
-- order; the last step (no contact with gifts left) deletes what rows
-- remain beyond them and sets the copy. It reports whether the build is
-- done (true as well when none runs). Each step holds the tenant's lock
-- exclusive for its own length only: the tenant's gifts wait that long.
-- +goose StatementBegin
CREATE FUNCTION orders.build_giving_periods(p_tenant uuid, p_contacts integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling := orders.giving_tenant(p_tenant, true);
    lo  bigint := coalesce(cal.periods_through, -9223372036854775808);
    hi  bigint;
BEGIN
    IF cal.periods_zone IS NULL THEN
        RETURN true;
    END IF;
    SELECT max(contact_id) INTO hi
    FROM (SELECT contact_id FROM orders.contact_giving WHERE tenant_id = p_tenant AND contact_id > lo
          ORDER BY contact_id LIMIT p_contacts) x;
    IF hi IS NULL THEN
        DELETE FROM orders.contact_giving_periods WHERE tenant_id = p_tenant AND contact_id > lo;
        UPDATE orders.giving_rolling SET time_zone = periods_zone, fiscal_year_start = periods_fy,
            periods_zone = NULL, periods_fy = NULL, periods_through = NULL
        WHERE tenant_id = p_tenant;
        RETURN true;
    END IF;
    cal.time_zone := cal.periods_zone;
    cal.fiscal_year_start := cal.periods_fy;
    PERFORM orders.build_range_period_rows(p_tenant, lo, hi, cal);
    PERFORM orders.add_range_donor_tallies(p_tenant, lo, hi, false);
    UPDATE orders.giving_rolling SET periods_through = hi WHERE tenant_id = p_tenant;
    RETURN false;
END;
$$;
-- +goose StatementEnd

-- An import batch while a build runs ends the build: the batch suspends
-- the period rows (00027: any batch does while the copy is dropped), and
-- the housekeeping starts the build again after the import's quiet.
ALTER FUNCTION orders.add_imported_gifts(uuid, uuid[]) RENAME TO add_imported_gifts_periods;

-- +goose StatementBegin
CREATE FUNCTION orders.add_imported_gifts(p_tenant uuid, p_orders uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    cal orders.giving_rolling := orders.giving_tenant(p_tenant, true);
BEGIN
    IF cal.periods_zone IS NOT NULL THEN
        UPDATE orders.giving_rolling SET periods_zone = NULL, periods_fy = NULL, periods_through = NULL
        WHERE tenant_id = p_tenant;
    END IF;
    PERFORM orders.add_imported_gifts_periods(p_tenant, p_orders);
END;
$$;
-- +goose StatementEnd

-- The tenants whose build runs, for the housekeeping.
CREATE INDEX giving_rolling_building ON orders.giving_rolling (tenant_id) WHERE periods_zone IS NOT NULL;

-- +goose Down
-- Forward-only, like every migration here (DESIGN.md).
