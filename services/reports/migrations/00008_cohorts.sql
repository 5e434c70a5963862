-- +goose Up
-- Cohorts (issue 34, docs/cohorts.md): a tenant's saved segments. The
-- definition is the JSON the grammar accepted, kept as given; members are
-- never stored, they are computed at every read. refs lists the cohorts
-- the definition names, so a delete can refuse one still referred to.
CREATE TABLE reports.cohorts (
    tenant_id   uuid        NOT NULL,
    id          uuid        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    definition  jsonb       NOT NULL,
    refs        text[]      NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX cohorts_tenant_name_key ON reports.cohorts (tenant_id, lower(name));

-- +goose Down
DROP TABLE reports.cohorts;
