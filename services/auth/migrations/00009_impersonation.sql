-- +goose Up
-- Support access and impersonation sessions. docs/operators.md.

-- A tenant's grant: operators may impersonate its users until `until`.
CREATE TABLE auth.support_access (
    tenant_id  uuid        PRIMARY KEY REFERENCES auth.tenants (id),
    until      timestamptz NOT NULL,
    granted_by text        NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now()
);

-- An operator's session working as one of a tenant's users. ended_at is
-- set however it ends; end_reason says how.
CREATE TABLE auth.impersonations (
    tenant_id   uuid        NOT NULL REFERENCES auth.tenants (id),
    id          uuid        NOT NULL,
    user_id     uuid        NOT NULL REFERENCES auth.users (id),
    operator_id uuid        NOT NULL REFERENCES auth.users (id),
    session_id  uuid        NOT NULL REFERENCES auth.sessions (id),
    reason      text        NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    end_reason  text,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT impersonations_id_key UNIQUE (id)
);

-- One at a time per operator: an open row blocks another.
CREATE UNIQUE INDEX impersonations_open_operator ON auth.impersonations (operator_id) WHERE ended_at IS NULL;
CREATE INDEX impersonations_open_session ON auth.impersonations (session_id) WHERE ended_at IS NULL;
CREATE INDEX impersonations_tenant ON auth.impersonations (tenant_id, started_at DESC);

-- +goose Down
DROP TABLE auth.impersonations;
DROP TABLE auth.support_access;
