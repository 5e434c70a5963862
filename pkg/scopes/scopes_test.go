package scopes

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryScope keeps docs/scopes.md in step with the catalog.
func TestDocsListEveryScope(t *testing.T) {
	b, err := os.ReadFile("../../docs/scopes.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, s := range Catalog {
		if !strings.Contains(doc, "| `"+s.Name+"` | "+s.Description+" |") {
			t.Errorf("docs/scopes.md lacks the row of %s", s.Name)
		}
	}
	if got, want := strings.Count(doc, "\n| `"), len(Catalog); got != want {
		t.Errorf("docs/scopes.md has %d scope rows, the catalog %d", got, want)
	}
}

func TestKnown(t *testing.T) {
	if !Known(OrdersCreate) || Known("orders:explode") || len(All()) != len(Catalog) {
		t.Error("catalog lookups")
	}
}
