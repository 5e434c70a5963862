-- +goose Up
-- Endpoints. The signing secret is stored sealed (AES-GCM, see
-- services/webhooks/secret.go) because the dispatcher must sign with it, so
-- a hash would not do. cursor is the endpoint's position in the audit log
-- (audit.Cursor.String()): events after it are not yet enqueued.
CREATE TABLE webhooks.endpoints (
    tenant_id    uuid        NOT NULL,
    id           uuid        NOT NULL,
    name         text        NOT NULL,
    url          text        NOT NULL,
    description  text        NOT NULL DEFAULT '',
    event_types  text[]      NOT NULL,
    secret_box   bytea       NOT NULL,
    active       boolean     NOT NULL DEFAULT true,
    cursor       text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    deleted_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- The dispatcher walks the live endpoints of every tenant on each tick.
CREATE INDEX endpoints_live ON webhooks.endpoints (tenant_id, id) WHERE active AND deleted_at IS NULL;

-- One row per (endpoint, event): the unique key makes enqueueing
-- idempotent, so two replicas or a retried tick never double an event.
-- body is the exact event body, built once, so every attempt sends (and
-- signs) the same bytes. next_attempt_at doubles as the claim lease: a
-- claimer pushes it past the send timeout, and a dispatcher that dies
-- before recording leaves the row due again when the lease runs out.
CREATE TABLE webhooks.deliveries (
    tenant_id       uuid        NOT NULL,
    id              uuid        NOT NULL,
    endpoint_id     uuid        NOT NULL,
    event_id        uuid        NOT NULL,
    event           text        NOT NULL,
    body            bytea       NOT NULL,
    occurred_at     timestamptz NOT NULL,
    enqueued_at     timestamptz NOT NULL DEFAULT now(),
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'abandoned')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (endpoint_id, event_id)
);

CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE state = 'pending';

-- One row per attempt; id is the attempt's X-Webhook-Delivery-Id.
-- delivery_id is null for the synthetic test event.
CREATE TABLE webhooks.attempts (
    tenant_id      uuid        NOT NULL,
    id             uuid        NOT NULL,
    endpoint_id    uuid        NOT NULL,
    delivery_id    uuid,
    event_id       uuid        NOT NULL,
    event          text        NOT NULL,
    attempt        integer     NOT NULL,
    attempted_at   timestamptz NOT NULL,
    success        boolean     NOT NULL,
    status_code    integer,
    duration_ms    bigint      NOT NULL,
    error          text,
    abandoned      boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX attempts_endpoint ON webhooks.attempts (tenant_id, endpoint_id, attempted_at DESC, id DESC);

-- +goose Down
DROP TABLE webhooks.attempts;
DROP TABLE webhooks.deliveries;
DROP TABLE webhooks.endpoints;
