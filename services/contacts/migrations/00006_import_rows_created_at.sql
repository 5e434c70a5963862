-- +goose Up
-- Import rows are pruned once they are older than the retention
-- (ALMONER_IMPORT_ROWS_RETENTION, docs/imports.md "Housekeeping"): they
-- answer a batch sent again by a resumed import, and the imports service
-- refuses to resume an import older than that. The rows had no time:
-- the rows already there take this migration's (now() is evaluated once
-- by ADD COLUMN, which writes no row: PostgreSQL keeps it as the
-- column's missing value).
ALTER TABLE contacts.import_rows ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

-- The prune scans by created_at. The table is append-only and its rows
-- arrive in time order, so a block range index is a few pages for any
-- size and costs the COPY of a batch next to nothing, where a btree would
-- add an entry per row. autosummarize summarizes each filled range in
-- the background, so the prune reads only the ranges that may hold old
-- rows (an unsummarized range is always read).
CREATE INDEX import_rows_created_at ON contacts.import_rows USING brin (created_at) WITH (autosummarize = on);

-- +goose Down
DROP INDEX contacts.import_rows_created_at;
ALTER TABLE contacts.import_rows DROP COLUMN created_at;
