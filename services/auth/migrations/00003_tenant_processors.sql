-- +goose Up
-- A tenant's own payment processor account (docs/processors.md). The two
-- keys are sealed with the deployment's ALMONER_WEBHOOK_SECRET_KEY
-- (package secretbox), bound to the tenant id and the column's name, so a
-- box copied to another tenant or column does not open. key_hint
-- (sk_test_…abcd) lets an operator recognise the key without it; the
-- secrets themselves never leave the auth service except to the orders
-- service over the internal ProcessorCredentialService.
CREATE TABLE auth.tenant_processors (
    tenant_id          uuid        PRIMARY KEY REFERENCES auth.tenants (id),
    provider           text        NOT NULL CHECK (provider IN ('stripe')),
    mode               text        NOT NULL CHECK (mode IN ('test', 'live')),
    secret_key_box     bytea       NOT NULL,
    webhook_secret_box bytea       NOT NULL,
    key_hint           text        NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE auth.tenant_processors;
