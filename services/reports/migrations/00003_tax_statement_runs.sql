-- +goose Up
-- Year-end runs: one giving statement per donor of a year, made in the
-- background by whichever replica holds the run's lease. cursor is the
-- last contact id done: a replica that takes the run over (the holder
-- stopped, its lease ran out) goes on after it, so no donor is made twice
-- and none is skipped. A batch's items and the cursor move in one
-- transaction that also checks the lease is still the writer's.
CREATE TABLE reports.tax_statement_runs (
    tenant_id     uuid        NOT NULL,
    id            uuid        NOT NULL,
    year          integer     NOT NULL,
    -- In major units; compared with a donor's total in each currency at
    -- that currency's decimals.
    minimum_amount numeric    NOT NULL DEFAULT 0,
    -- The year's bounds in the profile's time zone when the run was
    -- queued: a later change of time zone does not move a run's donors.
    period_start  timestamptz NOT NULL,
    period_end    timestamptz NOT NULL,
    status        text        NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    processed     integer     NOT NULL DEFAULT 0,
    total         integer,
    cursor        bigint      NOT NULL DEFAULT 0,
    lease_owner   text,
    lease_until   timestamptz,
    error         text        NOT NULL DEFAULT '',
    actor         text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);
-- The workers' queue: unfinished runs, oldest first.
CREATE INDEX tax_statement_runs_pending ON reports.tax_statement_runs (created_at) WHERE status IN ('queued', 'running');

-- One row per donor of a run: the statement as the wire codec wrote it
-- (the download makes the PDFs and the CSV from it) and the CSV's figures.
CREATE TABLE reports.tax_statement_run_items (
    tenant_id        uuid    NOT NULL,
    run_id           uuid    NOT NULL,
    contact_id       bigint  NOT NULL,
    statement_number text    NOT NULL,
    statement        bytea   NOT NULL,
    PRIMARY KEY (tenant_id, run_id, contact_id)
);

-- +goose Down
DROP TABLE reports.tax_statement_run_items;
DROP TABLE reports.tax_statement_runs;
