-- +goose Up
-- Sent messages are kept for ALMONER_MAIL_RETENTION and then deleted
-- (mail.Prune, run by the auth service's housekeeping): a sent message's
-- body may hold a donor's letter and its PDF, or a reset link, and the
-- queue is not an archive. The index finds the oldest sent rows without
-- reading the queue; failed rows stay for an operator (and a letter run's
-- document reads them), pending ones until they are sent.
CREATE INDEX outbox_sent ON mail.outbox (sent_at) WHERE sent_at IS NOT NULL;

-- +goose Down
DROP INDEX mail.outbox_sent;
