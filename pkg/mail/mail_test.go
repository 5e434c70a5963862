package mail_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/mail/mailtest"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestMain stops the shared mail server once the tests end, then fails
// them when a goroutine they started is still running (a sender or a
// connection a Close should have ended).
func TestMain(m *testing.M) {
	code := m.Run()
	mailtest.StopShared()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := db.Open(context.Background(), testdb.New(t, mail.Migrations()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func enqueue(t *testing.T, pool *pgxpool.Pool, m mail.Message) {
	t.Helper()
	err := db.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		_, err := mail.Enqueue(context.Background(), tx, m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func smtpTransport(t *testing.T, url string) mail.Transport {
	t.Helper()
	tr, err := mail.NewTransport(mail.Settings{SMTPURL: url}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A queued message reaches a real SMTP server with its plain-text part
// (and its HTML alternative) and the sender's address.
func TestSenderDeliversOverSMTP(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	pool := newPool(t)
	link := mail.Link("https://donors.example.org/", "/accept-invitation", "tok en")
	enqueue(t, pool, mail.Message{Kind: "invitation", To: "smtp-deliver@example.org", Subject: "You are invited",
		Text: "Accept: " + link + "\n", HTML: "<p><a href=\"" + link + "\">Accept</a></p>"})
	s := mail.NewSender(pool, smtpTransport(t, pit.SMTPURL), "Almoner <no-reply@example.org>", mail.SenderConfig{}, quiet)
	if n, err := s.Drain(context.Background()); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1, nil", n, err)
	}
	msgs := pit.Await(t, "smtp-deliver@example.org", 1)
	got := msgs[0]
	if got.Subject != "You are invited" || got.From.Address != "no-reply@example.org" {
		t.Errorf("subject %q from %q", got.Subject, got.From.Address)
	}
	if want := "https://donors.example.org/accept-invitation?token=tok+en"; !strings.Contains(got.Text, want) {
		t.Errorf("text part %q does not hold %q", got.Text, want)
	}
	if !strings.Contains(got.HTML, "<a href=") {
		t.Errorf("HTML part %q", got.HTML)
	}
	if n, err := s.Drain(context.Background()); err != nil || n != 0 {
		t.Errorf("second Drain = %d, %v; want nothing left to send", n, err)
	}
}

// A message whose server refuses the connection is not lost: it is due
// again after the backoff, sent once the server answers, and after its
// last attempt it is marked failed and never tried again.
func TestSenderRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	pool := newPool(t)
	ctx := context.Background()
	down := smtpTransport(t, "smtp://"+closedAddr(t))
	enqueue(t, pool, mail.Message{Kind: "test", To: "smtp-retry@example.org", Subject: "Retry", Text: "hello"})
	cfg := mail.SenderConfig{RetryBase: time.Hour, MaxAttempts: 3}
	failing := mail.NewSender(pool, down, "no-reply@example.org", cfg, quiet)
	if n, err := failing.Drain(ctx); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want one attempt", n, err)
	}
	var attempts int
	var wait time.Duration
	var lastErr string
	err := pool.QueryRow(ctx, `SELECT attempts, next_attempt_at - now(), last_error FROM mail.outbox`).Scan(&attempts, &wait, &lastErr)
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || wait < 50*time.Minute || lastErr == "" {
		t.Fatalf("after a failure: attempts %d, due in %v, last error %q; want 1, about an hour, an error", attempts, wait, lastErr)
	}
	if n, _ := failing.Drain(ctx); n != 0 {
		t.Fatalf("a message in its backoff was attempted again")
	}
	makeDue(t, pool)
	sender := mail.NewSender(pool, smtpTransport(t, pit.SMTPURL), "no-reply@example.org", cfg, quiet)
	if n, err := sender.Drain(ctx); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want the retry", n, err)
	}
	pit.Await(t, "smtp-retry@example.org", 1)

	enqueue(t, pool, mail.Message{Kind: "test", To: "smtp-retry-fail@example.org", Subject: "Fail", Text: "hello"})
	for range 3 {
		makeDue(t, pool)
		if _, err := failing.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	makeDue(t, pool)
	if n, _ := failing.Drain(ctx); n != 0 {
		t.Errorf("a message past its last attempt was tried again")
	}
	var failed bool
	if err := pool.QueryRow(ctx, `SELECT failed_at IS NOT NULL FROM mail.outbox WHERE to_address = 'smtp-retry-fail@example.org'`).Scan(&failed); err != nil || !failed {
		t.Errorf("failed_at set = %v, %v; want true", failed, err)
	}
}

// A message queued in a transaction that rolls back is never sent: it
// exists exactly when the change it reports does.
func TestEnqueueRollsBackWithTheChange(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	rollback := errors.New("the change failed")
	err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := mail.Enqueue(ctx, tx, mail.Message{Kind: "test", To: "a@example.org", Subject: "s", Text: "t"}); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM mail.outbox`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d queued after a rollback (%v); want 0", n, err)
	}
	err = db.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := mail.Enqueue(ctx, tx, mail.Message{Kind: "test", To: "a@example.org", Subject: "s"})
		return err
	})
	if !errors.Is(err, mail.ErrInvalid) {
		t.Errorf("a message without a plain-text part: %v; want ErrInvalid", err)
	}
}

// Without an SMTP server, ALMONER_MAIL_DIR receives each message as an
// .eml file with its plain-text part.
func TestDirTransportWritesEML(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	dir := t.TempDir()
	tr, err := mail.NewTransport(mail.Settings{Dir: dir}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, pool, mail.Message{Kind: "test", To: "dir@example.org", Subject: "On disk", Text: "plain words"})
	if n, err := mail.NewSender(pool, tr, mail.DefaultFrom, mail.SenderConfig{}, quiet).Drain(context.Background()); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(files) != 1 {
		t.Fatalf("files %v; want one .eml", files)
	}
	b, _ := os.ReadFile(files[0])
	for _, want := range []string{"Subject: On disk", "To: <dir@example.org>", "text/plain", "plain words"} {
		if !strings.Contains(string(b), want) {
			t.Errorf(".eml lacks %q:\n%s", want, b)
		}
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func makeDue(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE mail.outbox SET next_attempt_at = now() WHERE sent_at IS NULL`); err != nil {
		t.Fatal(err)
	}
}
