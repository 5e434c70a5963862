package templates

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/reports/render"
)

// Frames makes the documents templates fill. The reports service
// implements it: it owns the orders' figures, the profile and the
// branding a document prints.
type Frames interface {
	// Frame is the document a template of kind prints in and the merge
	// to fill it with, for the tenant's order orderID, or a sample gift
	// when orderID is empty. An order that is not the tenant's is
	// apperr.NotFound.
	Frame(ctx context.Context, tenant uuid.UUID, kind, orderID string) (render.Document, Merge, error)
}

// Filled is a template rendered for one document.
type Filled struct {
	Subject string
	// Body is the rendered body, before it is laid out (Text for a PDF,
	// HTML for an email).
	Body   string
	Format string
}

// Fill renders t's subject and body with m, within the render limits;
// ErrRender when either fails. A template saved before a merge field was
// withdrawn fails here as a render error rather than printing a hole.
func Fill(ctx context.Context, t Template, m Merge) (Filled, error) {
	data := m.Data()
	subject, err := Parse(t.Kind, t.Subject)
	if err != nil {
		return Filled{}, fmt.Errorf("%w: subject: %w", ErrRender, err)
	}
	body, err := Parse(t.Kind, t.Body)
	if err != nil {
		return Filled{}, fmt.Errorf("%w: body: %w", ErrRender, err)
	}
	s, err := Render(ctx, subject, data)
	if err != nil {
		return Filled{}, err
	}
	b, err := Render(ctx, body, data)
	if err != nil {
		return Filled{}, err
	}
	return Filled{Subject: strings.TrimSpace(strings.ReplaceAll(s, "\n", " ")), Body: b, Format: t.Format}, nil
}

// Apply puts a filled template on d: the subject is its title and the
// body its text. The title keeps what d's maker appended to it (a
// statement's "(corrected)"): suffix is that text.
func (f Filled) Apply(d render.Document, suffix string) render.Document {
	if f.Subject != "" {
		d.Title = f.Subject + suffix
	}
	d.Body = Text(f.Format, f.Body)
	return d
}
