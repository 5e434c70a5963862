-- +goose Up
-- A gift import summarizes its batch's gifts in one set of statements
-- (issue 38, docs/imports.md) instead of one deferred trigger per gift at
-- commit: at a million gifts the commit's per-row triggers (four
-- statements each, in PL/pgSQL) were most of the import's time. The
-- insert trigger now leaves imported orders (import_id set) to
-- orders.add_imported_gifts, which the import calls in the same
-- transaction, after writing the batch's orders and lines. Imported
-- orders are inserted as new gifts, so it only adds, as add_contact_gift
-- does; their later refunds, voids and moves go through the update
-- trigger as any gift's.
DROP TRIGGER orders_contact_giving_insert ON orders.orders;
CREATE CONSTRAINT TRIGGER orders_contact_giving_insert AFTER INSERT ON orders.orders
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.has_donations AND NEW.import_id IS NULL)
    EXECUTE FUNCTION orders.contact_giving_changed();

-- add_imported_gifts adds the gifts among p_orders (a batch of one
-- import) to their contacts' month and lifetime rows, set-based. It holds
-- the tenant's rolling lock exclusive, not each contact's lock: every
-- other writer of the tenant's summaries takes that lock shared first,
-- so none runs beside it, and a batch's thousands of contact locks would
-- fill PostgreSQL's lock table (max_locks_per_transaction). Live gifts of
-- the tenant wait for the rest of the batch's transaction at their
-- commit.
--
-- Its joins are a batch to the whole tables by primary key, written as
-- LATERAL probes kept apart by OFFSET 0 and with nothing but the key in
-- them: left to choose, the planner, on statistics that lag behind the
-- import, hashed a million orders for a batch of 5,000 (2 s a batch), or
-- probed the partial index of counted gifts by tenant alone (8 ms a
-- probe).
-- +goose StatementBegin
CREATE FUNCTION orders.add_imported_gifts(p_tenant uuid, p_orders uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    nil uuid := '00000000-0000-0000-0000-000000000000'::uuid;
    f   timestamptz := orders.giving_rolling_lock(p_tenant, true);
BEGIN
    CREATE TEMP TABLE imported_gifts ON COMMIT DROP AS
    SELECT o.id, o.contact_id, o.currency, o.created_at, date_trunc('month', o.created_at AT TIME ZONE 'UTC')::date AS month,
           o.donation_subtotal_minor - o.donation_refunded_minor AS net
    FROM unnest(p_orders) AS u(id)
    CROSS JOIN LATERAL (SELECT * FROM orders.orders WHERE tenant_id = p_tenant AND id = u.id OFFSET 0) o
    WHERE o.has_donations AND o.status IN ('Completed', 'PartiallyRefunded')
      AND o.donation_subtotal_minor - o.donation_refunded_minor > 0;
    INSERT INTO orders.contact_giving_months AS m
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, nil, month, contact_id, currency, count(*), sum(net), max(net), min(created_at), max(created_at)
    FROM imported_gifts GROUP BY month, contact_id, currency
    ON CONFLICT (tenant_id, fund_id, month, contact_id, currency) DO UPDATE SET
        gift_count = m.gift_count + EXCLUDED.gift_count, net_minor = m.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(m.largest_minor, EXCLUDED.largest_minor),
        first_at = least(m.first_at, EXCLUDED.first_at), last_at = greatest(m.last_at, EXCLUDED.last_at);
    INSERT INTO orders.contact_giving_months AS m
        (tenant_id, fund_id, month, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at)
    SELECT p_tenant, fund_id, month, contact_id, currency, count(*), sum(net), max(net), min(created_at), max(created_at)
    FROM (SELECT g.month, g.contact_id, g.currency, g.created_at, d.fund_id, d.net
          FROM imported_gifts g
          CROSS JOIN LATERAL (SELECT fund_id, sum(amount_minor - refunded_minor) AS net FROM orders.order_donations
                              WHERE tenant_id = p_tenant AND order_id = g.id GROUP BY fund_id OFFSET 0) d) x
    WHERE net > 0
    GROUP BY fund_id, month, contact_id, currency
    ON CONFLICT (tenant_id, fund_id, month, contact_id, currency) DO UPDATE SET
        gift_count = m.gift_count + EXCLUDED.gift_count, net_minor = m.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(m.largest_minor, EXCLUDED.largest_minor),
        first_at = least(m.first_at, EXCLUDED.first_at), last_at = greatest(m.last_at, EXCLUDED.last_at);
    INSERT INTO orders.contact_giving AS l
        (tenant_id, contact_id, currency, gift_count, net_minor, largest_minor, first_at, last_at, recent_minor, recent_count)
    SELECT p_tenant, contact_id, currency, count(*), sum(net), max(net), min(created_at), max(created_at),
           coalesce(sum(net) FILTER (WHERE created_at >= f), 0), count(*) FILTER (WHERE created_at >= f)
    FROM imported_gifts GROUP BY contact_id, currency
    ON CONFLICT (tenant_id, contact_id, currency) DO UPDATE SET
        gift_count = l.gift_count + EXCLUDED.gift_count, net_minor = l.net_minor + EXCLUDED.net_minor,
        largest_minor = greatest(l.largest_minor, EXCLUDED.largest_minor),
        first_at = least(l.first_at, EXCLUDED.first_at), last_at = greatest(l.last_at, EXCLUDED.last_at),
        recent_minor = l.recent_minor + EXCLUDED.recent_minor, recent_count = l.recent_count + EXCLUDED.recent_count;
    DROP TABLE imported_gifts;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION orders.add_imported_gifts(uuid, uuid[]);
DROP TRIGGER orders_contact_giving_insert ON orders.orders;
CREATE CONSTRAINT TRIGGER orders_contact_giving_insert AFTER INSERT ON orders.orders
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.has_donations)
    EXECUTE FUNCTION orders.contact_giving_changed();
