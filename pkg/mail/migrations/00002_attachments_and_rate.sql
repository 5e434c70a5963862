-- +goose Up
-- Letters (issue 32, docs/mail.md): a message may carry one attachment
-- (a letter's PDF) and a sender name (the tenant's), and the sender keeps
-- each tenant under ALMONER_MAIL_RATE attempts a second, counted from
-- attempted_at.
ALTER TABLE mail.outbox
    ADD COLUMN from_name text,
    ADD COLUMN attachment_name text,
    ADD COLUMN attachment_type text,
    ADD COLUMN attachment bytea,
    ADD COLUMN attempted_at timestamptz;

CREATE INDEX outbox_tenant_attempts ON mail.outbox (tenant_id, attempted_at) WHERE tenant_id IS NOT NULL;
