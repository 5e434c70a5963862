-- +goose Up
-- Processor notifications refused for a known tenant: a wrong or missing
-- signature, an event signed by the tenant's account that cannot be
-- applied, or one that arrived while a refund or void of its payment was
-- in flight (Stripe sends it again). One row per tenant, reason and hour
-- with a count, so a prober hammering a tenant's URL grows a counter,
-- not the table. An unknown slug names no tenant and is not recorded.
-- The platform's operations log reads them through orders.operations_v1.
CREATE TABLE orders.refused_notifications (
    tenant_id  uuid        NOT NULL,
    provider   text        NOT NULL,
    reason     text        NOT NULL,
    hour       timestamptz NOT NULL,
    count      integer     NOT NULL DEFAULT 1,
    first_at   timestamptz NOT NULL,
    last_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, provider, reason, hour)
);

-- The operations log's view (docs/operators.md): columns id, tenant_id,
-- kind, status, started_at, finished_at, detail, as every owner's.
CREATE VIEW orders.operations_v1 AS
SELECT tenant_id::text || ':' || provider || ':' || reason || ':' || extract(epoch FROM hour)::bigint AS id,
       tenant_id, 'processor_notification_refused'::text AS kind, 'refused'::text AS status,
       first_at AS started_at, last_at AS finished_at,
       provider || ' ' || reason || ' ×' || count AS detail
FROM orders.refused_notifications;

-- +goose Down
DROP VIEW orders.operations_v1;
DROP TABLE orders.refused_notifications;
