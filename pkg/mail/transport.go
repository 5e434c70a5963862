package mail

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/almoner/almoner/pkg/config"
)

// Transport delivers one built message.
type Transport interface {
	Send(ctx context.Context, msg *gomail.Msg) error
}

// Settings are the deployment's mail settings.
type Settings struct {
	// SMTPURL is ALMONER_SMTP_URL: smtp://[user:password@]host[:port]
	// (STARTTLS when the server offers it; port 587 by default) or
	// smtps://… (TLS from the start; port 465 by default).
	SMTPURL string
	// Dir is ALMONER_MAIL_DIR: without SMTPURL, each message is written
	// there as an .eml file (make run sets it to .data/mail).
	Dir string
	// From is ALMONER_MAIL_FROM, the sender address of every message.
	From string
	// PublicURL is ALMONER_PUBLIC_URL, the base of every link in a message.
	PublicURL string
}

// DefaultFrom is the sender address when ALMONER_MAIL_FROM is unset.
const DefaultFrom = "Almoner <no-reply@localhost>"

// DefaultPublicURL is the link base when ALMONER_PUBLIC_URL is unset: the
// address make run serves on.
const DefaultPublicURL = "http://localhost:8080"

// SettingsFromConfig reads the mail settings from src.
func SettingsFromConfig(src config.Source) Settings {
	return Settings{
		SMTPURL:   src.String("ALMONER_SMTP_URL", ""),
		Dir:       src.String("ALMONER_MAIL_DIR", ""),
		From:      src.String("ALMONER_MAIL_FROM", DefaultFrom),
		PublicURL: src.String("ALMONER_PUBLIC_URL", DefaultPublicURL),
	}
}

// sendTimeout bounds one message's SMTP conversation, so a server that
// stops answering holds a sender for at most this long.
const sendTimeout = 30 * time.Second

// NewTransport returns the transport the settings name: SMTP, else a
// folder of .eml files, else nil (messages stay queued until one is set).
func NewTransport(s Settings, logger *slog.Logger) (Transport, error) {
	switch {
	case s.SMTPURL != "":
		return newSMTP(s.SMTPURL)
	case s.Dir != "":
		if err := os.MkdirAll(s.Dir, 0o750); err != nil {
			return nil, fmt.Errorf("mail: ALMONER_MAIL_DIR: %w", err)
		}
		return &dirTransport{dir: s.Dir, logger: logger}, nil
	}
	return nil, nil
}

// smtpTransport sends through one SMTP server, a connection per message
// (a queue drains in small batches; a kept-open connection would need
// its own health checks).
type smtpTransport struct {
	client *gomail.Client
}

func newSMTP(raw string) (*smtpTransport, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "smtp" && u.Scheme != "smtps") {
		// The URL may hold a password: it is not repeated.
		return nil, fmt.Errorf("mail: ALMONER_SMTP_URL is not smtp://host[:port] or smtps://host[:port]")
	}
	opts := []gomail.Option{gomail.WithTimeout(sendTimeout)}
	port := 587
	if u.Scheme == "smtps" {
		port = 465
		opts = append(opts, gomail.WithSSL())
	} else {
		// STARTTLS when offered: a local relay or Mailpit offers none.
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("mail: ALMONER_SMTP_URL: port %q", p)
		}
	}
	opts = append(opts, gomail.WithPort(port))
	if u.User != nil {
		pw, _ := u.User.Password()
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(u.User.Username()), gomail.WithPassword(pw))
	}
	c, err := gomail.NewClient(u.Hostname(), opts...)
	if err != nil {
		return nil, fmt.Errorf("mail: SMTP client: %w", err)
	}
	return &smtpTransport{client: c}, nil
}

// Send delivers msg in one SMTP conversation.
func (t *smtpTransport) Send(ctx context.Context, msg *gomail.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return t.client.DialAndSendWithContext(ctx, msg)
}

// dirTransport writes each message to a file, for a developer's machine.
type dirTransport struct {
	dir    string
	logger *slog.Logger
}

// Send writes msg as <dir>/<time>-<id>.eml and logs the path.
func (t *dirTransport) Send(_ context.Context, msg *gomail.Msg) error {
	id := msg.GetGenHeader(gomail.HeaderMessageID)
	name := time.Now().UTC().Format("20060102T150405.000000000")
	if len(id) > 0 {
		name += "-" + sanitize(id[0])
	}
	path := filepath.Join(t.dir, name+".eml")
	if err := msg.WriteToFile(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	t.logger.Info("mail written", "path", path)
	return nil
}

// sanitize keeps the letters and digits of a Message-ID for a file name.
func sanitize(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			out = append(out, r)
		}
	}
	if len(out) > 40 {
		out = out[:40]
	}
	return string(out)
}
