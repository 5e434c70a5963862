-- +goose Up
-- The operator (operator:<userId>) who made the change as the actor
-- through an impersonation; NULL otherwise. docs/operators.md.
ALTER TABLE audit.events ADD COLUMN impersonator text;

-- +goose Down
ALTER TABLE audit.events DROP COLUMN impersonator;
