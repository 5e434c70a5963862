-- +goose Up
-- A new gift adds to its contact's giving summaries instead of rebuilding
-- them (issue 38; docs/cohorts.md, Design; docs/performance.md "Session
-- 12: one contact's gifts serialize on its giving summary").
--
-- refresh_contact_giving rebuilds a contact's month from every gift of
-- that month, so a contact with thousands of gifts a month (an
-- "Anonymous" contact for cash at events, text-to-give) paid for all of
-- them on each new one, under the contact's lock. A gift that did not
-- count before the event (an inserted order, or an update from Pending,
-- Voided, Failed or Refunded) and counts after it only adds: one to the
-- count, its net to the sums, greatest/least for largest, first and last.
-- Every other change (a refund, a void, a move to another contact, month
-- or currency) still rebuilds.
--
-- The triggers are deferred, so every event of a transaction runs at its
-- commit, after all its statements. A rebuild then reads the final rows,
-- which already hold any gift an event queued after it would add; so a
-- rebuild marks its contact's month rows (rebuilt_by, the transaction's
-- id) and an add that finds the mark does nothing. An add queued before a
-- rebuild is overwritten by it. An add reads the gift as its event saw it
-- (NEW): if a later statement of the transaction changed it again, that
-- change queued a rebuild of its own.
ALTER TABLE orders.contact_giving_months ADD COLUMN rebuilt_by xid8;

-- +goose StatementBegin
CREATE FUNCTION orders.add_contact_gift(g orders.orders) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    nil uuid := '00000000-0000-0000-0000-000000000000'::uuid;
    m   date := date_trunc('month', g.created_at AT TIME ZONE 'UTC')::date;
    net bigint := g.donation_subtotal_minor - g.donation_refunded_minor;
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
        (tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    VALUES (g.tenant_id, g.contact_id, g.currency, 1, net, net, g.created_at, g.created_at)
    ON CONFLICT (tenant_id, contact_id, currency) DO UPDATE SET
        gift_count = c.gift_count + 1, net_minor = c.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(c.largest_minor, EXCLUDED.largest_minor),
        first_at = least(c.first_at, EXCLUDED.first_at), last_at = greatest(c.last_at, EXCLUDED.last_at);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION orders.gift_counts(g orders.orders) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT g.has_donations AND g.status IN ('Completed', 'PartiallyRefunded')
       AND g.donation_subtotal_minor - g.donation_refunded_minor > 0
$$;
-- +goose StatementEnd

-- rebuild_contact_month rebuilds one contact's month and marks its rows
-- as rebuilt by this transaction.
-- +goose StatementBegin
CREATE FUNCTION orders.rebuild_contact_month(p_tenant uuid, p_contact bigint, p_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    m date := date_trunc('month', p_at AT TIME ZONE 'UTC')::date;
BEGIN
    PERFORM orders.refresh_contact_giving(p_tenant, p_contact, m);
    UPDATE orders.contact_giving_months SET rebuilt_by = pg_current_xact_id()
    WHERE tenant_id = p_tenant AND fund_id = '00000000-0000-0000-0000-000000000000'::uuid
      AND month = m AND contact_id = p_contact;
END;
$$;
-- +goose StatementEnd

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
    IF OLD.contact_id <> NEW.contact_id
        OR date_trunc('month', OLD.created_at AT TIME ZONE 'UTC') <> date_trunc('month', NEW.created_at AT TIME ZONE 'UTC') THEN
        PERFORM orders.rebuild_contact_month(OLD.tenant_id, OLD.contact_id, OLD.created_at);
    END IF;
    PERFORM orders.rebuild_contact_month(NEW.tenant_id, NEW.contact_id, NEW.created_at);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION orders.contact_giving_changed() RETURNS trigger
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
DROP FUNCTION orders.rebuild_contact_month(uuid, bigint, timestamptz);
DROP FUNCTION orders.gift_counts(orders.orders);
DROP FUNCTION orders.add_contact_gift(orders.orders);
ALTER TABLE orders.contact_giving_months DROP COLUMN rebuilt_by;
