-- +goose Up
-- Letter runs (docs/letters.md): one acknowledgement letter per pending
-- gift, made in batches by whichever replica holds the run's lease, as
-- year-end runs are. The cursor is the last gift done, (created_at,
-- order_id) in the order the gifts are read: a replica that takes the
-- run over goes on after it. A batch's letters, its counts and the cursor
-- move in one transaction that also checks the lease is still the
-- writer's (and, for email, queues the batch's messages).
CREATE TABLE reports.letter_runs (
    tenant_id          uuid        NOT NULL,
    id                 uuid        NOT NULL,
    template_id        uuid        NOT NULL,
    channel            text        NOT NULL CHECK (channel IN ('pdf', 'email')),
    mark_acknowledged  boolean     NOT NULL,
    -- The filter as given (its dates) and as applied (the bounds in the
    -- profile's time zone when the run was queued).
    filter             jsonb       NOT NULL,
    period_start       timestamptz NOT NULL,
    period_end         timestamptz NOT NULL,
    fund_ids           uuid[]      NOT NULL DEFAULT '{}',
    batch_id           uuid,
    min_amount_minor   bigint,
    status             text        NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    letters            integer     NOT NULL DEFAULT 0,
    emailed            integer     NOT NULL DEFAULT 0,
    skipped_no_email   integer     NOT NULL DEFAULT 0,
    skipped_do_not_email integer   NOT NULL DEFAULT 0,
    skipped_do_not_acknowledge integer NOT NULL DEFAULT 0,
    skipped_render_error integer   NOT NULL DEFAULT 0,
    cursor_at          timestamptz,
    cursor_id          uuid,
    lease_owner        text,
    lease_until        timestamptz,
    error              text        NOT NULL DEFAULT '',
    actor              text        NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    started_at         timestamptz,
    finished_at        timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX letter_runs_unfinished ON reports.letter_runs (created_at) WHERE status IN ('queued', 'running');

-- A run's letters, each as the document it prints (JSON of the filled
-- frame, a kilobyte or so): the merged PDF is laid out from them when it
-- is downloaded. mail_id is the queued message of an email letter.
CREATE TABLE reports.letters (
    tenant_id   uuid        NOT NULL,
    run_id      uuid        NOT NULL,
    order_id    uuid        NOT NULL,
    seq         bigint      NOT NULL,
    contact_id  bigint      NOT NULL,
    document    jsonb       NOT NULL,
    mail_id     uuid,
    PRIMARY KEY (tenant_id, run_id, order_id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES reports.letter_runs (tenant_id, id)
);
CREATE INDEX letters_run_seq ON reports.letters (tenant_id, run_id, seq);
