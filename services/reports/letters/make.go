package letters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/templates"
)

// Base is what every letter of a run shares: the frame (organization,
// page size, signature, footer, brand), the organization's merge fields
// and the profile's time zone.
type Base struct {
	Document     render.Document
	Organization templates.Organization
	Location     *time.Location
	// SenderName is the From header's name of an email letter: the
	// organization's.
	SenderName string
}

// Frames is what the reports service gives a run: it owns the orders'
// figures, the profile and the branding.
type Frames interface {
	// LetterBase is the tenant's letter frame.
	LetterBase(ctx context.Context, tenant uuid.UUID) (Base, error)
	// GiftMerge is a gift's contact and gift merge fields and the donor's
	// block.
	GiftMerge(ctx context.Context, tenant, orderID uuid.UUID, loc *time.Location) (templates.Merge, []string, error)
}

// Claimer acknowledges a run's gifts in the orders service.
type Claimer interface {
	// Claim answers which of ids the run now acknowledges.
	Claim(ctx context.Context, tenant, run uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error)
}

// job is one run being made.
type job struct {
	run     Run
	tmpl    templates.Template
	base    Base
	today   string
	frames  Frames
	claimer Claimer
}

// batch makes the letters of gifts: skipped gifts counted by reason, the
// others filled and laid out (an email letter as its message with the
// PDF attached), then, when the run acknowledges, claimed: a gift another
// run claimed first gets no letter here.
func (j *job) batch(ctx context.Context, gifts []Gift) (Batch, error) {
	var b Batch
	last := gifts[len(gifts)-1]
	b.CursorAt, b.CursorID = last.At, last.OrderID
	for _, g := range gifts {
		if skip := j.skip(g); skip != (Skips{}) {
			b.Skips.add(skip)
			continue
		}
		l, err := j.letter(ctx, g)
		if errors.Is(err, templates.ErrRender) {
			b.Skips.RenderError++
			continue
		}
		if err != nil {
			return b, err
		}
		b.Letters = append(b.Letters, l)
	}
	if !j.run.MarkAcknowledged || len(b.Letters) == 0 {
		return b, nil
	}
	return j.claim(ctx, b)
}

// skip says why a gift gets no letter, if it does not.
func (j *job) skip(g Gift) Skips {
	switch {
	case g.DoNotAcknowledge:
		return Skips{DoNotAcknowledge: 1}
	case j.run.Channel != "email":
		return Skips{}
	case g.DoNotEmail:
		return Skips{DoNotEmail: 1}
	case strings.TrimSpace(g.Email) == "":
		return Skips{NoEmail: 1}
	}
	return Skips{}
}

// claim keeps the letters of the gifts the run acknowledges.
func (j *job) claim(ctx context.Context, b Batch) (Batch, error) {
	ids := make([]uuid.UUID, len(b.Letters))
	for i, l := range b.Letters {
		ids[i] = l.OrderID
	}
	claimed, err := j.claimer.Claim(ctx, j.run.TenantID, j.run.ID, ids)
	if err != nil {
		return b, err
	}
	ours := make(map[uuid.UUID]bool, len(claimed))
	for _, id := range claimed {
		ours[id] = true
	}
	kept := b.Letters[:0]
	for _, l := range b.Letters {
		if ours[l.OrderID] {
			kept = append(kept, l)
		}
	}
	b.Letters = kept
	return b, nil
}

// letter fills the template for one gift; ErrRender when it fails.
func (j *job) letter(ctx context.Context, g Gift) (Letter, error) {
	m, donor, err := j.frames.GiftMerge(ctx, j.run.TenantID, g.OrderID, j.base.Location)
	if err != nil {
		return Letter{}, err
	}
	m.Organization, m.Today = j.base.Organization, j.today
	filled, err := templates.Fill(ctx, j.tmpl, m)
	if err != nil {
		return Letter{}, err
	}
	doc := j.base.Document
	doc.Donor = donor
	doc = filled.Apply(doc, "")
	l := Letter{OrderID: g.OrderID, At: g.At, ContactID: g.ContactID, Document: doc}
	if j.run.Channel == "email" {
		msg, err := j.message(g, filled, doc, m.Gift.OrderNumber)
		if err != nil {
			return Letter{}, err
		}
		l.Mail = &msg
	}
	return l, nil
}

// message is an email letter: the body as HTML and plain text, the
// letter's PDF attached, from the organization's name.
func (j *job) message(g Gift, f templates.Filled, doc render.Document, orderNumber string) (mail.Message, error) {
	var pdf bytes.Buffer
	if err := render.WriteDocument(doc, &pdf); err != nil {
		return mail.Message{}, fmt.Errorf("%w: %w", templates.ErrRender, err)
	}
	return mail.Message{
		TenantID: j.run.TenantID.String(), Kind: "letter", To: g.Email, FromName: j.base.SenderName,
		Subject: f.Subject, Text: strings.Join(templates.Text(f.Format, f.Body), "\n\n"), HTML: templates.Page(f),
		Attachment: &mail.Attachment{Name: "letter-" + orderNumber + ".pdf", ContentType: "application/pdf", Data: pdf.Bytes()},
	}, nil
}
