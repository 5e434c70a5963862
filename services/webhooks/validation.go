package webhooks

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/events"
)

// endpointInput is the body of a create or update.
type endpointInput struct {
	Name, URL, Description string
	EventTypes             []string
}

// validate checks the body and returns it cleaned (trimmed, event types
// de-duplicated in the given order).
func (p urlPolicy) validate(ctx context.Context, in endpointInput) (endpointInput, error) {
	var v apperr.Violations
	in.Name = strings.TrimSpace(in.Name)
	in.Description = strings.TrimSpace(in.Description)
	in.URL = strings.TrimSpace(in.URL)
	switch {
	case in.Name == "":
		v.Add("Name", "'Name' must not be empty.")
	case utf8.RuneCountInString(in.Name) > maxName:
		v.Add("Name", "'Name' must be %d characters or fewer.", maxName)
	}
	if utf8.RuneCountInString(in.Description) > maxDescription {
		v.Add("Description", "'Description' must be %d characters or fewer.", maxDescription)
	}
	if msg := p.validateURL(ctx, in.URL); msg != "" {
		v.Add("Url", "%s", msg)
	}
	if len(in.EventTypes) == 0 {
		v.Add("EventTypes", "'EventTypes' must not be empty.")
	} else if len(in.EventTypes) > maxEventTypes {
		v.Add("EventTypes", "'EventTypes' must have %d entries or fewer.", maxEventTypes)
	}
	seen := map[string]bool{}
	clean := make([]string, 0, len(in.EventTypes))
	for i, t := range in.EventTypes {
		t = strings.TrimSpace(t)
		if !events.Known(t) {
			v.Add(fmt.Sprintf("EventTypes[%d]", i), "'%s' is not a subscribable event type; see GET /webhooks/event-types.", truncate(t, 100))
			continue
		}
		if !seen[t] {
			seen[t] = true
			clean = append(clean, t)
		}
	}
	in.EventTypes = clean
	return in, v.Err()
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
