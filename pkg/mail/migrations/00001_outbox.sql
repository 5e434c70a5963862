-- +goose Up
-- The outbound email queue. A service inserts a message in the same
-- transaction as the change it reports (mail.Enqueue); the sender
-- (mail.Sender) claims due rows with a lease, sends them with no
-- transaction open, and records the outcome. A slow or failing SMTP server
-- therefore never fails or slows the request that queued the message.
CREATE TABLE mail.outbox (
    id              uuid        PRIMARY KEY,
    -- tenant_id names the tenant the message is about, when there is one
    -- (an invitation); a platform message (an operator's) has none.
    tenant_id       uuid,
    kind            text        NOT NULL,
    to_address      text        NOT NULL,
    subject         text        NOT NULL,
    text_body       text        NOT NULL,
    html_body       text,
    attempts        integer     NOT NULL DEFAULT 0,
    -- next_attempt_at is when the row is next due: now for a new message,
    -- the end of the lease while a sender holds it, the backoff's end
    -- after a failure.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    -- failed_at is set when the last attempt failed: the row stays, for an
    -- operator to read, and is never tried again.
    failed_at       timestamptz
);

CREATE INDEX outbox_due ON mail.outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- +goose Down
DROP TABLE mail.outbox;
