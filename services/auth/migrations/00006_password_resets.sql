-- +goose Up
-- Password resets: a one-hour, single-use token mailed to the user; only
-- a SHA-256 hash of it is kept.
CREATE TABLE auth.password_resets (
    id         uuid        PRIMARY KEY,
    user_id    uuid        NOT NULL REFERENCES auth.users (id),
    token_hash bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT password_resets_token_hash_key UNIQUE (token_hash)
);

CREATE INDEX password_resets_user ON auth.password_resets (user_id) WHERE used_at IS NULL;

-- +goose Down
DROP TABLE auth.password_resets;
