-- +goose Up
-- The audit log: one row per create, update or delete in any service,
-- written in the same transaction as the change. It feeds the webhook
-- dispatcher and the audit feeds.
--
-- xid is the writing transaction's id. Readers that must not skip a row
-- whose transaction commits late read in (xid, id) order and only below the
-- oldest transaction still in flight (pg_snapshot_xmin), see audit.Reader.
CREATE TABLE audit.events (
    tenant_id   uuid        NOT NULL,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    event_id    uuid        NOT NULL,
    xid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
    entity_type text        NOT NULL,
    entity_id   text        NOT NULL,
    action      text        NOT NULL CHECK (action IN ('Created', 'Updated', 'Deleted')),
    event       text        NOT NULL,
    changes     jsonb,
    actor       text        NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

CREATE UNIQUE INDEX events_event_id ON audit.events (event_id);
CREATE INDEX events_xid_id ON audit.events (xid, id);
CREATE INDEX events_entity ON audit.events (tenant_id, entity_type, entity_id, id DESC);

-- +goose Down
DROP TABLE audit.events;
