-- +goose Up
-- A tenant's document templates (docs/letters.md, Templates). Each tenant
-- has one default per kind, made the first time its templates are read
-- (so no tenant-creation hook in another service is needed); the partial
-- unique index keeps it one even when two first reads race.
CREATE TABLE reports.document_templates (
    tenant_id   uuid        NOT NULL,
    id          uuid        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('acknowledgement', 'receipt', 'statement')),
    name        text        NOT NULL,
    subject     text        NOT NULL,
    body        text        NOT NULL,
    format      text        NOT NULL CHECK (format IN ('markdown', 'text')),
    is_default  boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX document_templates_default ON reports.document_templates (tenant_id, kind) WHERE is_default;
