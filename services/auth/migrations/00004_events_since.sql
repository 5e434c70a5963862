-- +goose Up
-- events_since is when the tenant last began to fire events (it became
-- active with webhooks:enabled, or was created so). The webhooks
-- dispatcher never delivers an event that occurred before it, so an event
-- committed while the flag was off stays undelivered even when the
-- dispatcher first reads it after the flag is back on (docs/webhooks.md,
-- "Turning webhooks off"). NULL: no switch recorded, no bound; existing
-- tenants keep every event they have, so an upgrade drops nothing.
ALTER TABLE auth.tenants ADD COLUMN events_since timestamptz;

-- +goose Down
ALTER TABLE auth.tenants DROP COLUMN events_since;
