package templates

import (
	"bytes"
	"html"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
)

// Formats of a template's body.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
)

// md converts Markdown; goldmark leaves raw HTML out unless told
// otherwise, and the sanitizer runs after it all the same.
var md = goldmark.New()

// policy is what an HTML letter may hold: bluemonday's policy for user
// content (no script, no event handler, no javascript: link, no style).
var policy = bluemonday.UGCPolicy()

// HTML is a rendered body as sanitized HTML: Markdown converted, text
// escaped into paragraphs. Merge values were put in before conversion, so
// whatever a donor's name holds is sanitized with the rest.
func HTML(format, rendered string) string {
	var b bytes.Buffer
	if format == FormatMarkdown {
		if err := md.Convert([]byte(rendered), &b); err != nil {
			b.Reset()
			b.WriteString("<pre>" + html.EscapeString(rendered) + "</pre>")
		}
	} else {
		for _, p := range paragraphs(rendered) {
			b.WriteString("<p>" + strings.ReplaceAll(html.EscapeString(p), "\n", "<br>") + "</p>\n")
		}
	}
	return policy.Sanitize(b.String())
}

var blankLines = regexp.MustCompile(`\n\s*\n`)

func paragraphs(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []string
	for _, p := range blankLines.Split(s, -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// strict keeps no tag: what a PDF prints of an HTML letter.
var strict = bluemonday.StrictPolicy()

var blockEnd = regexp.MustCompile(`(?i)</(p|h[1-6]|li|blockquote|pre)>|<br\s*/?>`)

// Text is a rendered body as the paragraphs a PDF prints: Markdown
// converted and its tags dropped (emphasis prints plain), text as it is.
func Text(format, rendered string) []string {
	if format != FormatMarkdown {
		return paragraphs(rendered)
	}
	var b bytes.Buffer
	if err := md.Convert([]byte(rendered), &b); err != nil {
		return paragraphs(rendered)
	}
	withBreaks := blockEnd.ReplaceAllString(b.String(), "\n\n")
	return paragraphs(html.UnescapeString(strict.Sanitize(withBreaks)))
}

func htmlEscape(s string) string { return html.EscapeString(s) }
