-- +goose Up
-- A tenant's look on its documents (docs/letters.md, Branding): colors,
-- the signature under letters and the logo, kept as the service encoded
-- it again (only pixels, never the uploaded file's other chunks).
CREATE TABLE reports.branding (
    tenant_id       uuid        PRIMARY KEY,
    primary_color   text        NOT NULL DEFAULT '',
    secondary_color text,
    signature_name  text,
    signature_title text,
    logo            bytea,
    logo_type       text CHECK (logo_type IN ('image/png', 'image/jpeg')),
    logo_width      integer     NOT NULL DEFAULT 0,
    logo_height     integer     NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
