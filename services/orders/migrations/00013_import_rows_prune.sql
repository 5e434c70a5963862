-- +goose Up
-- Import rows are pruned once they are older than the retention
-- (ALMONER_IMPORT_ROWS_RETENTION, docs/imports.md "Housekeeping"), by
-- created_at. The table is append-only and its rows arrive in time
-- order, so a block range index is a few pages for any size and costs
-- the INSERT of a batch next to nothing, where a btree would add an entry
-- per row. autosummarize summarizes each filled range in the background,
-- so the prune reads only the ranges that may hold old rows (an
-- unsummarized range is always read).
CREATE INDEX import_rows_created_at ON orders.import_rows USING brin (created_at) WITH (autosummarize = on);

-- +goose Down
DROP INDEX orders.import_rows_created_at;
