package auth

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/telemetry"
)

// Retention says how long the auth service keeps rows nobody can use any
// more. Sessions, reset links, emailed codes and trusted browsers go a
// day (ExpiredGrace) after they stopped working; sent email after Mail;
// the security log after SecurityLog. config.Keep (negative) in Mail or
// SecurityLog keeps them for good.
type Retention struct {
	// Interval is how often the housekeeping runs.
	Interval time.Duration
	// Mail is how long a sent message stays in mail.outbox
	// (ALMONER_MAIL_RETENTION).
	Mail time.Duration
	// SecurityLog is how long a user's security log entry is kept
	// (ALMONER_SECURITY_LOG_RETENTION).
	SecurityLog time.Duration
}

// Retention defaults: an hourly pass, sent mail for 30 days, the security
// log for 400 days (a year and its anniversary's questions).
const (
	DefaultHousekeepingInterval = time.Hour
	DefaultSecurityLogRetention = 400 * 24 * time.Hour
	// ExpiredGrace is how long a credential that stopped working is kept
	// before it is deleted: a request racing its expiry still finds it and
	// is refused for the right reason.
	ExpiredGrace = 24 * time.Hour
)

// DefaultRetention returns the defaults.
func DefaultRetention() Retention {
	return Retention{Interval: DefaultHousekeepingInterval, Mail: mail.DefaultRetention, SecurityLog: DefaultSecurityLogRetention}
}

// readRetention reads ALMONER_MAIL_RETENTION and
// ALMONER_SECURITY_LOG_RETENTION: a duration of at least a day, or "off"
// to keep the rows for good.
func readRetention(src config.Source) (Retention, error) {
	r := DefaultRetention()
	var err error
	if r.Mail, err = src.Retention("ALMONER_MAIL_RETENTION", r.Mail, 24*time.Hour); err != nil {
		return Retention{}, err
	}
	if r.SecurityLog, err = src.Retention("ALMONER_SECURITY_LOG_RETENTION", r.SecurityLog, 24*time.Hour); err != nil {
		return Retention{}, err
	}
	return r, nil
}

// withDefaults is r with each zero field at DefaultRetention's.
func (r Retention) withDefaults() Retention {
	def := DefaultRetention()
	if r.Interval <= 0 {
		r.Interval = def.Interval
	}
	if r.Mail == 0 {
		r.Mail = def.Mail
	}
	if r.SecurityLog == 0 {
		r.SecurityLog = def.SecurityLog
	}
	return r
}

// prunedRows counts the rows the housekeeping deleted, by table.
var prunedRows = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "almoner_auth_pruned_rows_total",
	Help: "Rows the auth service's housekeeping deleted, by table: expired sessions, reset links, email codes and trusted devices, old security log entries, sent email.",
}, []string{"table"})

func init() { telemetry.Register(prunedRows) }

// housekeep prunes at start, then every Retention.Interval, until ctx ends.
func (s *Service) housekeep(ctx context.Context) {
	t := time.NewTicker(s.cfg.Retention.Interval)
	defer t.Stop()
	for {
		if err := s.prune(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("auth: housekeeping", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune is one housekeeping pass: the credentials that stopped working a
// day ago, the security log and the sent mail older than their retention.
func (s *Service) prune(ctx context.Context) error {
	r, now := s.cfg.Retention, s.now()
	var logBefore time.Time
	if r.SecurityLog > 0 {
		logBefore = now.Add(-r.SecurityLog)
	}
	p, err := s.store.Prune(ctx, now.Add(-ExpiredGrace), logBefore)
	for table, n := range map[string]int64{"sessions": p.Sessions, "password_resets": p.PasswordResets,
		"mfa_email_codes": p.EmailCodes, "trusted_devices": p.TrustedDevices, "security_log": p.SecurityLog} {
		prunedRows.WithLabelValues(table).Add(float64(n))
	}
	if err != nil {
		return err
	}
	var sent int64
	if r.Mail > 0 {
		if sent, err = mail.Prune(ctx, s.store.Pool(), now.Add(-r.Mail)); err != nil {
			return err
		}
		prunedRows.WithLabelValues("mail_outbox").Add(float64(sent))
	}
	if total := p.Total() + sent; total > 0 {
		s.logger.Info("auth: housekeeping pruned rows", "sessions", p.Sessions, "password_resets", p.PasswordResets,
			"email_codes", p.EmailCodes, "trusted_devices", p.TrustedDevices, "security_log", p.SecurityLog, "sent_mail", sent)
	}
	return nil
}
