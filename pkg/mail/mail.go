// Package mail owns the outbound email queue (schema mail): the writer a
// service calls inside the transaction that makes a change, and the sender
// that delivers queued messages over SMTP (or into a folder of .eml files
// when no SMTP server is configured) with retries. docs/mail.md describes
// it.
package mail

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/db"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the mail schema's migrations. A service that queues
// mail lists them among its own, as it lists the audit log's.
func Migrations() db.Migrations {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return db.Migrations{Schema: "mail", FS: sub}
}

// Message is one email to send.
type Message struct {
	// TenantID is the tenant the message is about; empty for none.
	TenantID string
	// Kind names what the message is (invitation, password-reset, …), for
	// the log and the operator reading the queue.
	Kind string
	To   string
	// Subject is one line.
	Subject string
	// Text is the plain-text part every message has.
	Text string
	// HTML is an optional alternative part.
	HTML string
	// FromName is the sender's display name (a tenant's, on its letters);
	// the address stays ALMONER_MAIL_FROM's. Empty: ALMONER_MAIL_FROM as
	// it is.
	FromName string
	// Attachment is an optional file (a letter's PDF).
	Attachment *Attachment
}

// Attachment is a file attached to a message.
type Attachment struct {
	Name        string
	ContentType string
	Data        []byte
}

// ErrInvalid is returned by Enqueue for a message it cannot send.
var ErrInvalid = errors.New("mail: invalid message")

// check refuses a message the sender could never deliver: it would only
// fail on every attempt.
func (m Message) check() error {
	switch {
	case m.Kind == "":
		return fmt.Errorf("%w: no kind", ErrInvalid)
	case strings.TrimSpace(m.To) == "" || strings.ContainsAny(m.To, "\r\n"):
		return fmt.Errorf("%w: recipient %q", ErrInvalid, m.To)
	case strings.ContainsAny(m.Subject, "\r\n"):
		return fmt.Errorf("%w: a line break in the subject", ErrInvalid)
	case m.Text == "":
		return fmt.Errorf("%w: no plain-text part", ErrInvalid)
	case strings.ContainsAny(m.FromName, "\r\n"):
		return fmt.Errorf("%w: a line break in the sender's name", ErrInvalid)
	case m.Attachment != nil && (m.Attachment.Name == "" || m.Attachment.ContentType == "" || strings.ContainsAny(m.Attachment.Name, "\r\n\"/\\")):
		return fmt.Errorf("%w: attachment %q", ErrInvalid, m.Attachment.Name)
	}
	return nil
}

const insertSQL = `INSERT INTO mail.outbox (id, tenant_id, kind, to_address, subject, text_body, html_body, from_name,
	attachment_name, attachment_type, attachment)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// Enqueue queues m inside tx, the transaction that makes the change the
// message reports: the message exists exactly when the change commits, and
// the request never waits on the SMTP server. It returns the message's id.
func Enqueue(ctx context.Context, tx pgx.Tx, m Message) (uuid.UUID, error) {
	if err := m.check(); err != nil {
		return uuid.Nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, fmt.Errorf("mail: new id: %w", err)
	}
	var tenant *uuid.UUID
	if m.TenantID != "" {
		t, err := uuid.Parse(m.TenantID)
		if err != nil {
			return uuid.Nil, fmt.Errorf("%w: tenant id %q", ErrInvalid, m.TenantID)
		}
		tenant = &t
	}
	var html *string
	if m.HTML != "" {
		html = &m.HTML
	}
	var fromName, attName, attType *string
	var att []byte
	if m.FromName != "" {
		fromName = &m.FromName
	}
	if a := m.Attachment; a != nil {
		attName, attType, att = &a.Name, &a.ContentType, a.Data
	}
	if _, err := tx.Exec(ctx, insertSQL, id, tenant, m.Kind, m.To, m.Subject, m.Text, html, fromName, attName, attType, att); err != nil {
		return uuid.Nil, fmt.Errorf("mail: enqueue %s: %w", m.Kind, err)
	}
	return id, nil
}

// Link returns the address of a page of the public site with a token in
// its query: <publicURL><path>?token=<token>. publicURL is
// ALMONER_PUBLIC_URL (Settings.PublicURL).
func Link(publicURL, path, token string) string {
	return strings.TrimRight(publicURL, "/") + path + "?" + url.Values{"token": {token}}.Encode()
}
