package events

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEventsDocOutsideCatalog keeps docs/events.md's examples of feed
// types outside the webhook catalog true: each it names must not be
// subscribable (webhook_endpoint.updated was named there after it joined
// the catalog).
func TestEventsDocOutsideCatalog(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "Types outside the webhook catalog are in the feed too:")
	if !ok {
		t.Fatal("docs/events.md no longer names the feed types outside the catalog")
	}
	line, _, _ := strings.Cut(rest, "\n")
	names := regexp.MustCompile("`([a-z_]+\\.[a-z]+)`").FindAllStringSubmatch(line, -1)
	if len(names) == 0 {
		t.Fatalf("no event types in %q", line)
	}
	for _, m := range names {
		if Known(m[1]) {
			t.Errorf("docs/events.md names %s as outside the webhook catalog, but it is in it", m[1])
		}
	}
}
