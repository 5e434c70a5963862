-- +goose Up
-- Platform operators: a platform role on a user, needing no tenant
-- membership, and their invitations. docs/operators.md.

ALTER TABLE auth.users ADD COLUMN platform_role text
    CHECK (platform_role IN ('support', 'platform-admin'));

-- An operator's invitation names no tenant; only a SHA-256 hash of its
-- token is stored, as for a member's.
CREATE TABLE auth.operator_invitations (
    id         uuid        PRIMARY KEY,
    user_id    uuid        NOT NULL REFERENCES auth.users (id),
    token_hash bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT operator_invitations_token_hash_key UNIQUE (token_hash)
);

-- +goose Down
DROP TABLE auth.operator_invitations;
ALTER TABLE auth.users DROP COLUMN platform_role;
