-- +goose Up
CREATE TABLE auth.tenants (
    id               uuid        PRIMARY KEY,
    name             text        NOT NULL,
    slug             text        NOT NULL,
    active           boolean     NOT NULL DEFAULT true,
    features         text[]      NOT NULL DEFAULT '{}',
    default_currency text        NOT NULL DEFAULT 'USD',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_slug_key UNIQUE (slug)
);

-- Only a SHA-256 hash of the key is stored. lookup_id is the public part of
-- the key that finds the row; it is unique across tenants because the key
-- alone (without the tenant) must identify it.
CREATE TABLE auth.api_keys (
    tenant_id    uuid        NOT NULL REFERENCES auth.tenants (id),
    id           uuid        NOT NULL,
    name         text        NOT NULL,
    lookup_id    text        NOT NULL,
    key_prefix   text        NOT NULL,
    key_hash     bytea       NOT NULL,
    environment  text        NOT NULL CHECK (environment IN ('sandbox', 'production')),
    scopes       text[]      NOT NULL,
    expires_at   timestamptz,
    last_used_at timestamptz,
    active       boolean     NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    deleted_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT api_keys_lookup_id_key UNIQUE (lookup_id)
);

CREATE INDEX api_keys_tenant_created ON auth.api_keys (tenant_id, created_at DESC) WHERE deleted_at IS NULL;

-- +goose Down
DROP TABLE auth.api_keys;
DROP TABLE auth.tenants;
