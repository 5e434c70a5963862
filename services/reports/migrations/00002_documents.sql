-- +goose Up
-- The organization profile printed on receipts and statements, one per
-- tenant. It lives with the documents that print it (docs/reports.md).
-- address is the postal address as given (line1, line2, city,
-- stateProvince, postalCode, country).
CREATE TABLE reports.organization_profiles (
    tenant_id       uuid        PRIMARY KEY,
    legal_name      text        NOT NULL,
    tax_id          text        NOT NULL,
    address         jsonb       NOT NULL DEFAULT '{}',
    email           text        NOT NULL DEFAULT '',
    phone           text        NOT NULL DEFAULT '',
    website         text        NOT NULL DEFAULT '',
    signatory_name  text        NOT NULL DEFAULT '',
    signatory_title text        NOT NULL DEFAULT '',
    receipt_footer  text        NOT NULL DEFAULT '',
    country         text        NOT NULL DEFAULT 'US',
    time_zone       text        NOT NULL DEFAULT 'America/New_York',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Every document issued, so that its number stays the same however often
-- it is made again: one row per order receipt (subject = the order id) and
-- per giving statement (subject = contact id and year). content_hash is
-- the SHA-256 of the document's figures; when they change (a refund after
-- the first issue), the revision goes up and the document says it is a
-- correction. number is per tenant and kind, from document_counters.
CREATE TABLE reports.issued_documents (
    tenant_id       uuid        NOT NULL,
    kind            text        NOT NULL CHECK (kind IN ('receipt', 'statement')),
    subject         text        NOT NULL,
    number          bigint      NOT NULL,
    revision        integer     NOT NULL DEFAULT 1,
    content_hash    bytea       NOT NULL,
    first_issued_at timestamptz NOT NULL DEFAULT now(),
    issued_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, kind, subject),
    UNIQUE (tenant_id, kind, number)
);

-- The last document number handed out per tenant and kind. Numbers have
-- no gaps: a number is taken under this row's lock, in the transaction
-- that records the document.
CREATE TABLE reports.document_counters (
    tenant_id  uuid   NOT NULL,
    kind       text   NOT NULL,
    last_value bigint NOT NULL,
    PRIMARY KEY (tenant_id, kind)
);

-- +goose Down
DROP TABLE reports.document_counters;
DROP TABLE reports.issued_documents;
DROP TABLE reports.organization_profiles;
