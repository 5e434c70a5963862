-- +goose Up
-- Multi-factor authentication, the user's security log and custom roles.
-- docs/auth.md.

-- A session that passed the password but not yet the second factor; it
-- may only verify, send an email code and sign out.
ALTER TABLE auth.sessions ADD COLUMN mfa_pending boolean NOT NULL DEFAULT false;

-- One row per user with a factor or an enrollment under way. The TOTP
-- secret is sealed (pkg/secretbox, bound to the user id), never in clear;
-- totp_last_step is the last time step accepted, so a code is good once.
CREATE TABLE auth.user_mfa (
    user_id        uuid        PRIMARY KEY REFERENCES auth.users (id),
    totp_secret    bytea,
    totp_enabled   boolean     NOT NULL DEFAULT false,
    totp_last_step bigint      NOT NULL DEFAULT 0,
    email_enabled  boolean     NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Emailed codes: only a SHA-256 hash (keyed by the user id) is kept.
CREATE TABLE auth.mfa_email_codes (
    id         uuid        PRIMARY KEY,
    user_id    uuid        NOT NULL REFERENCES auth.users (id),
    code_hash  bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX mfa_email_codes_user ON auth.mfa_email_codes (user_id) WHERE used_at IS NULL;

-- Recovery codes: SHA-256 hashes; a used code keeps its row.
CREATE TABLE auth.recovery_codes (
    user_id    uuid        NOT NULL REFERENCES auth.users (id),
    code_hash  bytea       NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, code_hash)
);

-- Browsers that skip the second factor; only a SHA-256 hash of the device
-- cookie is kept.
CREATE TABLE auth.trusted_devices (
    id           uuid        PRIMARY KEY,
    user_id      uuid        NOT NULL REFERENCES auth.users (id),
    token_hash   bytea       NOT NULL,
    user_agent   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    CONSTRAINT trusted_devices_token_hash_key UNIQUE (token_hash)
);

CREATE INDEX trusted_devices_user ON auth.trusted_devices (user_id, created_at DESC);

-- The user's own security log (sign-ins, password and factor changes),
-- across tenants: tenant audit rows stay in audit.events.
CREATE TABLE auth.security_log (
    id         uuid        PRIMARY KEY,
    user_id    uuid        NOT NULL REFERENCES auth.users (id),
    action     text        NOT NULL,
    ip_address text        NOT NULL DEFAULT '',
    user_agent text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX security_log_user ON auth.security_log (user_id, id DESC);

-- A tenant's custom roles; the built-in ones live in code.
CREATE TABLE auth.roles (
    tenant_id  uuid        NOT NULL REFERENCES auth.tenants (id),
    id         uuid        NOT NULL,
    name       text        NOT NULL,
    scopes     text[]      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT roles_name_key UNIQUE (tenant_id, name)
);

-- +goose Down
DROP TABLE auth.roles;
DROP TABLE auth.security_log;
DROP TABLE auth.trusted_devices;
DROP TABLE auth.recovery_codes;
DROP TABLE auth.mfa_email_codes;
DROP TABLE auth.user_mfa;
ALTER TABLE auth.sessions DROP COLUMN mfa_pending;
