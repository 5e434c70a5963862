-- +goose Up
-- Saved report definitions. parameters holds the values as given (strings
-- by parameter key); they are validated against the type on every write
-- and resolved again on every run, so a default such as "today" moves.
CREATE TABLE reports.definitions (
    tenant_id   uuid        NOT NULL,
    id          uuid        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    type_key    text        NOT NULL,
    parameters  jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- Soft delete: nothing is physically deleted through the API.
    deleted_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX definitions_tenant_name ON reports.definitions (tenant_id, lower(name), id) WHERE deleted_at IS NULL;

-- One row per run and export ("each run is recorded").
CREATE TABLE reports.runs (
    tenant_id   uuid        NOT NULL,
    id          uuid        NOT NULL,
    report_id   uuid,
    type_key    text        NOT NULL,
    parameters  jsonb       NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('run', 'export')),
    format      text        NOT NULL DEFAULT '',
    row_count   bigint      NOT NULL,
    duration_ms bigint      NOT NULL,
    actor       text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX runs_report ON reports.runs (tenant_id, report_id, id DESC) WHERE report_id IS NOT NULL;

-- +goose Down
DROP TABLE reports.runs;
DROP TABLE reports.definitions;
