package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	gomail "github.com/wneessen/go-mail"
)

// SenderConfig tunes the sender; zero fields take the defaults.
type SenderConfig struct {
	// Interval is how often the sender looks for due messages
	// (ALMONER_MAIL_INTERVAL); it bounds how long a new message waits.
	Interval time.Duration
	// RetryBase is the delay after a first failed attempt; each later
	// failure doubles it, up to RetryMax.
	RetryBase time.Duration
	// RetryMax caps the delay between attempts.
	RetryMax time.Duration
	// MaxAttempts is how many attempts a message gets before it is marked
	// failed and left for an operator.
	MaxAttempts int
}

// Defaults of SenderConfig: a message waits at most 5 s, and a failing one
// is tried 8 times over about two hours (1, 2, 4, … 64 minutes apart).
const (
	DefaultInterval    = 5 * time.Second
	DefaultRetryBase   = time.Minute
	DefaultRetryMax    = time.Hour
	DefaultMaxAttempts = 8
)

// lease is how long a claimed message is held before another sender may
// take it: longer than one SMTP conversation may last, so a message is
// only sent twice when its sender died (or lost the database) mid-send.
const lease = sendTimeout + 30*time.Second

// Sender delivers the queue's due messages, one at a time: claim (a
// committed lease), send with no transaction open, record the outcome.
// Several senders may run at once (FOR UPDATE SKIP LOCKED).
type Sender struct {
	pool      *pgxpool.Pool
	transport Transport
	from      string
	cfg       SenderConfig
	logger    *slog.Logger
	now       func() time.Time
}

// NewSender returns a sender of pool's queue over transport, from the
// address from.
func NewSender(pool *pgxpool.Pool, transport Transport, from string, cfg SenderConfig, logger *slog.Logger) *Sender {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	return &Sender{pool: pool, transport: transport, from: from, cfg: cfg, logger: logger, now: time.Now}
}

// Run sends due messages every Interval until ctx ends.
func (s *Sender) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.Drain(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("mail: drain the queue", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Drain sends every message due now and returns how many it attempted.
func (s *Sender) Drain(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		q, err := s.claim(ctx)
		if errors.Is(err, pgx.ErrNoRows) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		sendErr := s.send(ctx, q)
		if err := s.record(ctx, q, sendErr); err != nil {
			return n, err
		}
	}
	return n, ctx.Err()
}

// queued is a claimed message.
type queued struct {
	ID       uuid.UUID
	Kind     string
	To       string
	Subject  string
	Text     string
	HTML     *string
	Attempts int
}

// claimSQL takes the oldest due message and holds it for the lease: the
// attempt is counted before it is made, so a sender that dies mid-send
// still uses one of the message's attempts.
const claimSQL = `UPDATE mail.outbox SET attempts = attempts + 1, next_attempt_at = now() + $1::interval
WHERE id = (SELECT id FROM mail.outbox WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
            ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, kind, to_address, subject, text_body, html_body, attempts`

func (s *Sender) claim(ctx context.Context) (queued, error) {
	var q queued
	err := s.pool.QueryRow(ctx, claimSQL, lease).Scan(&q.ID, &q.Kind, &q.To, &q.Subject, &q.Text, &q.HTML, &q.Attempts)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return q, fmt.Errorf("mail: claim: %w", err)
	}
	return q, err
}

// send builds q and hands it to the transport.
func (s *Sender) send(ctx context.Context, q queued) error {
	msg, err := s.build(q)
	if err != nil {
		return err
	}
	return s.transport.Send(ctx, msg)
}

// build turns a queued message into a MIME message: a plain-text part,
// with the HTML part as its alternative when there is one. The
// Message-ID is the queue row's, so a resent message is recognisably the
// same one.
func (s *Sender) build(q queued) (*gomail.Msg, error) {
	m := gomail.NewMsg()
	if err := m.From(s.from); err != nil {
		return nil, fmt.Errorf("from %q: %w", s.from, err)
	}
	if err := m.To(q.To); err != nil {
		return nil, fmt.Errorf("to: %w", err)
	}
	m.Subject(q.Subject)
	m.SetMessageIDWithValue(q.ID.String() + "@almoner")
	m.SetDate()
	m.SetBodyString(gomail.TypeTextPlain, q.Text)
	if q.HTML != nil {
		m.AddAlternativeString(gomail.TypeTextHTML, *q.HTML)
	}
	return m, nil
}

// record writes an attempt's outcome: sent, due again after the backoff,
// or failed for good after the last attempt.
func (s *Sender) record(ctx context.Context, q queued, sendErr error) error {
	// The outcome is written even when ctx ended mid-send: a message that
	// went out must not be sent again.
	ctx = context.WithoutCancel(ctx)
	if sendErr == nil {
		_, err := s.pool.Exec(ctx, `UPDATE mail.outbox SET sent_at = now(), last_error = NULL WHERE id = $1`, q.ID)
		return wrap(err, "mark sent")
	}
	s.logger.Warn("mail: send failed", "id", q.ID, "kind", q.Kind, "attempt", q.Attempts, "error", sendErr)
	if q.Attempts >= s.cfg.MaxAttempts {
		_, err := s.pool.Exec(ctx, `UPDATE mail.outbox SET failed_at = now(), last_error = $2 WHERE id = $1`, q.ID, sendErr.Error())
		return wrap(err, "mark failed")
	}
	_, err := s.pool.Exec(ctx, `UPDATE mail.outbox SET next_attempt_at = now() + $2::interval, last_error = $3 WHERE id = $1`,
		q.ID, s.backoff(q.Attempts), sendErr.Error())
	return wrap(err, "schedule retry")
}

// backoff is the delay after the attempts-th failed attempt: RetryBase
// doubled for each earlier failure, at most RetryMax.
func (s *Sender) backoff(attempts int) time.Duration {
	d := s.cfg.RetryBase
	for i := 1; i < attempts && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.RetryMax)
}

func wrap(err error, what string) error {
	if err != nil {
		return fmt.Errorf("mail: %s: %w", what, err)
	}
	return nil
}
