package mail_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	gomail "github.com/wneessen/go-mail"

	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/mail/mailtest"
)

// A letter carries its PDF and the tenant's name as the sender's.
func TestSenderAttachesAndNamesTheSender(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	pool := newPool(t)
	enqueue(t, pool, mail.Message{TenantID: uuid.NewString(), Kind: "letter", To: "letter-attach@example.org", Subject: "Thank you",
		Text: "Thank you.", HTML: "<p>Thank you.</p>", FromName: "Société d'Entraide",
		Attachment: &mail.Attachment{Name: "letter-1001.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 fake")}})
	s := mail.NewSender(pool, smtpTransport(t, pit.SMTPURL), "Almoner <no-reply@example.org>", mail.SenderConfig{}, quiet)
	if n, err := s.Drain(context.Background()); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1, nil", n, err)
	}
	got := pit.Await(t, "letter-attach@example.org", 1)[0]
	if got.From.Name != "Société d'Entraide" || got.From.Address != "no-reply@example.org" {
		t.Errorf("from %+v", got.From)
	}
	if len(got.Attachments) != 1 || got.Attachments[0].FileName != "letter-1001.pdf" || got.Attachments[0].ContentType != "application/pdf" {
		t.Errorf("attachments %+v", got.Attachments)
	}
}

// countTransport counts messages by recipient.
type countTransport struct {
	mu sync.Mutex
	to map[string]int
}

func (c *countTransport) Send(_ context.Context, m *gomail.Msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range m.GetToString() {
		c.to[a]++
	}
	return nil
}

// A tenant at its rate waits; another tenant's message goes meanwhile.
// One drain takes a few milliseconds, far inside the rate's second.
func TestSenderKeepsTheRatePerTenant(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	busy, other := uuid.NewString(), uuid.NewString()
	for range 5 {
		enqueue(t, pool, mail.Message{TenantID: busy, Kind: "letter", To: "busy@example.org", Subject: "S", Text: "T"})
	}
	enqueue(t, pool, mail.Message{TenantID: other, Kind: "invitation", To: "other@example.org", Subject: "S", Text: "T"})
	tr := &countTransport{to: map[string]int{}}
	s := mail.NewSender(pool, tr, "Almoner <no-reply@example.org>", mail.SenderConfig{RatePerTenant: 2}, quiet)
	if n, err := s.Drain(context.Background()); err != nil || n != 3 {
		t.Fatalf("Drain = %d, %v; want 3 (two of the busy tenant's, the other's), nil", n, err)
	}
	if tr.to["<busy@example.org>"] != 2 || tr.to["<other@example.org>"] != 1 {
		t.Errorf("sent %v", tr.to)
	}
}
