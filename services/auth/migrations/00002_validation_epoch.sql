-- +goose Up
-- The validation epoch lets gateways cache key validations safely
-- (docs/auth.md, "Validation cache"). Every change that can turn a
-- successful validation into a failure (a revoked key, a tenant deactivated
-- or its features changed) moves it in the same transaction; a gateway
-- drops its cache when it reads a new value.
CREATE TABLE auth.validation_epoch (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch     bigint  NOT NULL
);
INSERT INTO auth.validation_epoch (epoch) VALUES (1);

-- +goose Down
DROP TABLE auth.validation_epoch;
