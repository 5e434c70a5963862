package auth

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/scopes"
)

// TestDocsListRoleScopes keeps docs/scopes.md's role table in step with
// roleScopes, and every role's scopes in the catalog.
func TestDocsListRoleScopes(t *testing.T) {
	b, err := os.ReadFile("../../docs/scopes.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range roleNames {
		sc := roleScopes[role]
		for _, s := range sc {
			if !scopes.Known(s) {
				t.Errorf("role %s: unknown scope %s", role, s)
			}
		}
		row := "| " + role + " | " + "`" + strings.Join(sc, "`, `") + "` |"
		switch role {
		case RoleOwner:
			row = "| owner | every scope |"
			if len(sc) != len(scopes.All()) {
				t.Errorf("owner has %d scopes, want all %d", len(sc), len(scopes.All()))
			}
		case RoleAdmin:
			row = "| admin | every scope but `owners:manage` |"
			if len(sc) != len(scopes.All())-1 || slices.Contains(sc, scopes.OwnersManage) {
				t.Errorf("admin scopes %v", sc)
			}
		}
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/scopes.md lacks the row\n%s", row)
		}
	}
}
