-- +goose Up
-- A batch's description: free text given when it is opened, which
-- integrators of the reference system already send with a new batch.
-- Daily batches have none.
ALTER TABLE orders.batches ADD COLUMN description text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE orders.batches DROP COLUMN description;
