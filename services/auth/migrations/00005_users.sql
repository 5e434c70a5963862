-- +goose Up
-- Staff users: one row per person across the platform (one email, one
-- password), a membership with a role in each tenant that invited them,
-- single-use invitations and server-side sessions. docs/auth.md.

-- password_hash is an argon2id PHC string ($argon2id$v=19$m=…,t=…,p=…$salt$hash),
-- NULL until the user accepts a first invitation.
CREATE TABLE auth.users (
    id              uuid        PRIMARY KEY,
    email           text        NOT NULL,
    password_hash   text,
    first_name      text        NOT NULL DEFAULT '',
    last_name       text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    last_sign_in_at timestamptz
);

-- One user per email, compared without case.
CREATE UNIQUE INDEX users_email_key ON auth.users (lower(email));

CREATE TABLE auth.memberships (
    tenant_id  uuid        NOT NULL REFERENCES auth.tenants (id),
    user_id    uuid        NOT NULL REFERENCES auth.users (id),
    role       text        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('invited', 'active', 'deactivated')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id)
);

CREATE INDEX memberships_user ON auth.memberships (user_id);

-- Only a SHA-256 hash of an invitation's token is stored.
CREATE TABLE auth.invitations (
    tenant_id  uuid        NOT NULL,
    id         uuid        NOT NULL,
    user_id    uuid        NOT NULL,
    token_hash bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES auth.memberships (tenant_id, user_id),
    CONSTRAINT invitations_token_hash_key UNIQUE (token_hash)
);

-- A session is a user's, across the tenants they belong to; only a
-- SHA-256 hash of its id (the cookie's value) is stored.
CREATE TABLE auth.sessions (
    id           uuid        PRIMARY KEY,
    user_id      uuid        NOT NULL REFERENCES auth.users (id),
    token_hash   bytea       NOT NULL,
    user_agent   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    ended_at     timestamptz,
    CONSTRAINT sessions_token_hash_key UNIQUE (token_hash)
);

CREATE INDEX sessions_user ON auth.sessions (user_id, created_at DESC) WHERE ended_at IS NULL;

-- +goose Down
DROP TABLE auth.sessions;
DROP TABLE auth.invitations;
DROP TABLE auth.memberships;
DROP TABLE auth.users;
