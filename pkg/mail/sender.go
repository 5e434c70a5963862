package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"regexp"
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
	// RatePerTenant is the most attempts a second for one tenant's
	// messages (ALMONER_MAIL_RATE); DefaultRatePerTenant when zero.
	RatePerTenant int
}

// Defaults of SenderConfig: a message waits at most 5 s, and a failing one
// is tried 8 times over about two hours (1, 2, 4, … 64 minutes apart).
const (
	DefaultInterval    = 5 * time.Second
	DefaultRetryBase   = time.Minute
	DefaultRetryMax    = time.Hour
	DefaultMaxAttempts = 8
	// DefaultRatePerTenant: 10 messages a second per tenant, so one
	// tenant's letter run does not hold everyone's invitations back
	// (other tenants' messages are claimed meanwhile) nor trip the SMTP
	// provider's limits.
	DefaultRatePerTenant = 10
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
	if cfg.RatePerTenant <= 0 {
		cfg.RatePerTenant = DefaultRatePerTenant
	}
	return &Sender{pool: pool, transport: transport, from: from, cfg: cfg, logger: logger, now: time.Now}
}

// Run sends due messages every Interval until ctx ends. After a drain
// that sent something it looks again within a second: a drain also stops
// when every due message belongs to a tenant at its rate, and that tenant
// may send again a second later.
func (s *Sender) Run(ctx context.Context) {
	for {
		n, err := s.Drain(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("mail: drain the queue", "error", err)
		}
		wait := s.cfg.Interval
		if n > 0 {
			wait = min(wait, rateWindow)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// rateWindow is the window RatePerTenant counts attempts in.
const rateWindow = time.Second

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
	FromName *string
	AttName  *string
	AttType  *string
	Att      []byte
}

// claimSQL takes the oldest due message and holds it for the lease: the
// attempt is counted before it is made, so a sender that dies mid-send
// still uses one of the message's attempts.
//
// A tenant that made RatePerTenant ($2) attempts in the last second has
// none of its messages claimed until it falls under: the oldest due
// message of another tenant goes first. Attempts of senders in flight
// count (attempted_at is written by the claim), so several senders keep
// the rate together.
const claimSQL = `UPDATE mail.outbox SET attempts = attempts + 1, next_attempt_at = now() + $1::interval, attempted_at = now()
WHERE id = (SELECT o.id FROM mail.outbox o WHERE o.sent_at IS NULL AND o.failed_at IS NULL AND o.next_attempt_at <= now()
              AND (o.tenant_id IS NULL OR (SELECT count(*) FROM mail.outbox r WHERE r.tenant_id = o.tenant_id
                                            AND r.attempted_at > now() - interval '1 second') < $2)
            ORDER BY o.next_attempt_at, o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, kind, to_address, subject, text_body, html_body, attempts, from_name, attachment_name, attachment_type, attachment`

func (s *Sender) claim(ctx context.Context) (queued, error) {
	var q queued
	err := s.pool.QueryRow(ctx, claimSQL, lease, s.cfg.RatePerTenant).Scan(&q.ID, &q.Kind, &q.To, &q.Subject, &q.Text, &q.HTML, &q.Attempts,
		&q.FromName, &q.AttName, &q.AttType, &q.Att)
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
	if err := s.setFrom(m, q.FromName); err != nil {
		return nil, err
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
	if q.AttName != nil && q.AttType != nil {
		if err := m.AttachReader(*q.AttName, bytes.NewReader(q.Att), gomail.WithFileContentType(gomail.ContentType(*q.AttType))); err != nil {
			return nil, fmt.Errorf("attach %s: %w", *q.AttName, err)
		}
	}
	return m, nil
}

// setFrom sets the From header: ALMONER_MAIL_FROM, with name as its
// display name when there is one.
func (s *Sender) setFrom(m *gomail.Msg, name *string) error {
	if name == nil || *name == "" {
		if err := m.From(s.from); err != nil {
			return fmt.Errorf("from %q: %w", s.from, err)
		}
		return nil
	}
	addr, err := netmail.ParseAddress(s.from)
	if err != nil {
		return fmt.Errorf("from %q: %w", s.from, err)
	}
	if err := m.FromFormat(*name, addr.Address); err != nil {
		return fmt.Errorf("from %q <%s>: %w", *name, addr.Address, err)
	}
	return nil
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
	if q.Attempts >= s.cfg.MaxAttempts || permanent(sendErr) {
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

// permanent reports whether the SMTP server refused the message for good
// (a 5xx reply: no such mailbox, say): trying again would only fail
// again, so the message is marked failed at once.
// go-mail tells only temporary (4xx) from the rest, and the rest includes
// a dropped connection, so the 5xx code is looked for in its text.
func permanent(err error) bool {
	var se *gomail.SendError
	return errors.As(err, &se) && !se.IsTemp() && smtpPermanent.MatchString(se.Error())
}

// smtpPermanent finds a 5xx SMTP reply in a SendError's text ("…: 550
// 5.1.1 no such user").
var smtpPermanent = regexp.MustCompile(`(^|: )5\d\d[ -]`)
