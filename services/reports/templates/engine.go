// Package templates is the tenant's document templates: their merge
// fields, their validation and their rendering (docs/letters.md,
// Templates). Templates are Mustache (github.com/cbroglie/mustache),
// parsed only through ParseStringPartialsRaw with a provider that has no
// partials: the package's ParseString reads $CWD and partial files from
// disk, so it is never called.
package templates

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cbroglie/mustache"

	"github.com/almoner/almoner/pkg/apperr"
)

// Render limits per document: a template that reaches either fails that
// document (a letter run counts it under renderError), never the run.
const (
	MaxRenderTime  = 100 * time.Millisecond
	MaxRenderBytes = 1 << 20
)

// ErrRender is the error of a document whose template could not be
// rendered within the limits.
var ErrRender = errors.New("templates: render")

// Merge fields: the closed set a template may name. Values are strings
// (already formatted: an amount in its currency), or, for gifts, a list
// of maps.
var (
	contactFields = []string{"contact.firstName", "contact.lastName", "contact.salutation", "contact.address.line1",
		"contact.address.line2", "contact.address.city", "contact.address.stateProvince", "contact.address.postalCode",
		"contact.address.country"}
	giftFields = []string{"gift.amount", "gift.date", "gift.fund", "gift.orderNumber", "gift.deductibleAmount",
		"gift.goodsAndServicesValue", "gift.tribute.type", "gift.tribute.name"}
	organizationFields = []string{"organization.legalName", "organization.taxId", "organization.email", "organization.phone",
		"organization.website", "organization.signatureName", "organization.signatureTitle", "organization.address.line1",
		"organization.address.line2", "organization.address.city", "organization.address.stateProvince",
		"organization.address.postalCode", "organization.address.country"}
	// statementGiftFields are the names inside {{#gifts}}…{{/gifts}}.
	statementGiftFields = []string{"amount", "date", "fund", "orderNumber", "deductibleAmount", "goodsAndServicesValue"}
)

// Kinds of template.
const (
	KindAcknowledgement = "acknowledgement"
	KindReceipt         = "receipt"
	KindStatement       = "statement"
)

// Fields returns the merge fields of a kind, in documentation order:
// every kind has contact.*, organization.* and today; acknowledgements and
// receipts gift.*; statements gifts[] and total.
func Fields(kind string) []string {
	out := append(append([]string{}, contactFields...), organizationFields...)
	out = append(out, "today")
	if kind == KindStatement {
		return append(out, "gifts", "total", "year")
	}
	return append(out, giftFields...)
}

// noPartials refuses every partial: a template reaches no file.
type noPartials struct{}

func (noPartials) Get(name string) (string, error) {
	return "", fmt.Errorf("partials are not allowed ({{> %s}})", name)
}

// Parse checks a body of kind: Mustache syntax, no partials, no change of
// delimiters, only the kind's merge fields (gifts only as a section, and
// not inside itself). A violation is under "Body" and names the line,
// counted from 1.
func Parse(kind, body string) (*mustache.Template, error) {
	if err := forbidden(body); err != nil {
		return nil, err
	}
	tmpl, err := mustache.ParseStringPartialsRaw(body, noPartials{}, true)
	if err != nil {
		var pe mustache.ParseError
		if errors.As(err, &pe) {
			return nil, bodyInvalid(pe.Line, pe.Error()[len(fmt.Sprintf("line %d: ", pe.Line)):])
		}
		return nil, bodyInvalid(1, err.Error())
	}
	known := map[string]bool{}
	for _, f := range Fields(kind) {
		known[f] = true
	}
	if err := newTagWalk(body, known).check(tmpl.Tags(), false); err != nil {
		return nil, err
	}
	return tmpl, nil
}

// tagPattern finds a tag in the default delimiters (the only ones
// allowed), with its sigil and name.
var tagPattern = regexp.MustCompile(`\{\{(\{|[#^/!>&=]?)\s*([^}]*?)\s*\}?\}\}`)

// forbidden refuses, by line, what the parser would accept but a
// template may not do: partials (they name files) and delimiter changes
// (every later tag would escape this check).
func forbidden(body string) error {
	for _, m := range tagPattern.FindAllStringSubmatchIndex(body, -1) {
		switch body[m[2]:m[3]] {
		case ">":
			return bodyInvalid(lineAt(body, m[0]), "Partials ({{> name}}) are not allowed: a template includes nothing.")
		case "=":
			return bodyInvalid(lineAt(body, m[0]), "Changing the delimiters ({{=<% %>=}}) is not allowed.")
		}
	}
	return nil
}

// tagWalk walks the parsed tags in document order, beside the lines of
// the opening tags in the body (same order: closing tags and comments
// are no parsed tags).
type tagWalk struct {
	known map[string]bool
	lines []int
	i     int
}

func newTagWalk(body string, known map[string]bool) *tagWalk {
	w := &tagWalk{known: known}
	for _, m := range tagPattern.FindAllStringSubmatchIndex(body, -1) {
		if sigil := body[m[2]:m[3]]; sigil != "/" && sigil != "!" {
			w.lines = append(w.lines, lineAt(body, m[0]))
		}
	}
	return w
}

// line is the line of the tag being checked.
func (w *tagWalk) line() int {
	if w.i < len(w.lines) {
		return w.lines[w.i]
	}
	return 1
}

// check walks tags: every variable and section must be a known field;
// gifts may only open a section, and inside it only a gift's fields and
// the top-level ones are known.
func (w *tagWalk) check(tags []mustache.Tag, inGifts bool) error {
	for _, t := range tags {
		name := t.Name()
		isSection := t.Type() == mustache.Section || t.Type() == mustache.InvertedSection
		ok := w.known[name] && name != "gifts" || inGifts && slices.Contains(statementGiftFields, name)
		opensGifts := name == "gifts" && isSection && w.known["gifts"] && !inGifts
		if !ok && !opensGifts {
			return bodyInvalid(w.line(), fmt.Sprintf("'%s' is not a merge field of this kind of template.", name))
		}
		w.i++
		if isSection {
			if err := w.check(t.Tags(), inGifts || opensGifts); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineAt is the line of byte offset i, counted from 1 as an editor shows
// it (a CRLF is one line break).
func lineAt(body string, i int) int { return strings.Count(body[:i], "\n") + 1 }

func bodyInvalid(line int, msg string) error {
	return apperr.Invalid(apperr.Violation{Field: "Body", Message: fmt.Sprintf("Line %d: %s", line, msg)})
}

// limitWriter fails once more than n bytes were written, and stays
// failed: mustache drops the error of a variable's write (only a text
// segment's error stops the render), so the render must also ask it
// afterwards (over) rather than trust FRender's answer alone.
type limitWriter struct {
	sb   strings.Builder
	n    int
	over bool
}

var errTooLong = errors.New("more than 1 MiB of output")

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.over || w.sb.Len()+len(p) > w.n {
		w.over = true
		return 0, errTooLong
	}
	return w.sb.Write(p)
}

// Render renders tmpl with data (maps, slices and strings only: Mustache
// calls a function it finds in the data, and reads a struct's methods)
// within MaxRenderTime and MaxRenderBytes. Past either it returns
// ErrRender. The render goroutine left behind at the time limit ends at
// the size limit at the latest: Parse bounds every loop by the data.
func Render(ctx context.Context, tmpl *mustache.Template, data map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, MaxRenderTime)
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		w := &limitWriter{n: MaxRenderBytes}
		err := tmpl.FRender(io.Writer(w), data)
		if err == nil && w.over {
			err = errTooLong
		}
		done <- result{w.sb.String(), err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return "", fmt.Errorf("%w: %w", ErrRender, r.err)
		}
		return r.out, nil
	case <-ctx.Done():
		return "", fmt.Errorf("%w: took longer than %s", ErrRender, MaxRenderTime)
	}
}
