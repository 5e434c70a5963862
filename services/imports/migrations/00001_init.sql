-- +goose Up
-- One row per import. An upload in progress is 'uploading' (no caller has
-- its id yet, so reads answer 404); its lease is renewed as chunks arrive,
-- and an upload whose lease ran out was abandoned (its process died) and
-- is deleted. The runner then moves it queued → validating → importing →
-- succeeded | failed, holding lease_owner/lease_until while it works; a
-- lease that ran out lets another replica resume it after checkpoint, the
-- last row whose outcome is counted. currency is the tenant's default
-- currency when the file was uploaded: the exponent of a gift amount
-- given without a currency.
CREATE TABLE imports.imports (
    tenant_id       uuid        NOT NULL,
    id              uuid        NOT NULL,
    kind            text        NOT NULL CHECK (kind IN ('contacts', 'gifts')),
    format          text        NOT NULL CHECK (format IN ('csv', 'jsonl')),
    duplicates      text        NOT NULL CHECK (duplicates IN ('skip', 'update', 'create')),
    dry_run         boolean     NOT NULL DEFAULT false,
    currency        text        NOT NULL DEFAULT '',
    status          text        NOT NULL DEFAULT 'uploading'
                    CHECK (status IN ('uploading', 'queued', 'validating', 'importing', 'succeeded', 'failed')),
    rows            bigint      NOT NULL DEFAULT 0,
    created         bigint      NOT NULL DEFAULT 0,
    updated         bigint      NOT NULL DEFAULT 0,
    skipped         bigint      NOT NULL DEFAULT 0,
    failed          bigint      NOT NULL DEFAULT 0,
    size_bytes      bigint      NOT NULL DEFAULT 0,
    sha256          bytea,
    idempotency_key text,
    checkpoint      bigint      NOT NULL DEFAULT 0,
    lease_owner     text,
    lease_until     timestamptz,
    actor           text        NOT NULL,
    message         text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz,
    PRIMARY KEY (tenant_id, id)
);

-- A repeated Idempotency-Key of a tenant finds the first import.
CREATE UNIQUE INDEX imports_idempotency_key ON imports.imports (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The runners' claim scans the unfinished imports only.
CREATE INDEX imports_unfinished ON imports.imports (created_at) WHERE status IN ('uploading', 'queued', 'validating', 'importing');

-- The uploaded file, in order, in chunks of up to 1 MiB: any replica can
-- read it, a few chunks at a time. Deleted once the import finishes.
CREATE TABLE imports.import_chunks (
    tenant_id uuid    NOT NULL,
    import_id uuid    NOT NULL,
    seq       integer NOT NULL,
    data      bytea   NOT NULL,
    PRIMARY KEY (tenant_id, import_id, seq),
    FOREIGN KEY (tenant_id, import_id) REFERENCES imports.imports (tenant_id, id) ON DELETE CASCADE
);

-- Why rows were rejected. The key makes recording idempotent: a batch
-- recorded again after a resume (or validation run again) adds nothing.
CREATE TABLE imports.import_errors (
    tenant_id   uuid   NOT NULL,
    import_id   uuid   NOT NULL,
    row         bigint NOT NULL,
    column_name text   NOT NULL,
    message     text   NOT NULL,
    PRIMARY KEY (tenant_id, import_id, row, column_name),
    FOREIGN KEY (tenant_id, import_id) REFERENCES imports.imports (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE imports.import_errors;
DROP TABLE imports.import_chunks;
DROP TABLE imports.imports;
