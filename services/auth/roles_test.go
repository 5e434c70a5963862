package auth

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
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

func TestValidateRole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		role   string
		scopes []string
		want   []string // fields refused; nil when valid
		out    []string
	}{
		{"valid, put in catalog order without repeats", "auditor", []string{"reports:view", "contacts:view", "reports:view"}, nil,
			[]string{"contacts:view", "reports:view"}},
		{"unknown scope", "auditor", []string{"contacts:view", "contacts:fly"}, []string{"Scopes[1]"}, nil},
		{"no scopes", "auditor", nil, []string{"Scopes"}, nil},
		{"built-in name", "admin", []string{"contacts:view"}, []string{"Name"}, nil},
		{"upper case", "Auditor", []string{"contacts:view"}, []string{"Name"}, nil},
		{"empty name", "", []string{"contacts:view"}, []string{"Name"}, nil},
		{"51 characters", "a" + strings.Repeat("b", 50), []string{"contacts:view"}, []string{"Name"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := validateRole(tc.role, tc.scopes)
			if tc.want == nil {
				if err != nil || !slices.Equal(out, tc.out) {
					t.Errorf("got %v, %v; want %v", out, err, tc.out)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Kind != apperr.KindInvalid {
				t.Fatalf("got %v, want a validation error", err)
			}
			var fields []string
			for _, v := range e.Violations {
				fields = append(fields, v.Field)
			}
			if !slices.Equal(fields, tc.want) {
				t.Errorf("fields %v, want %v", fields, tc.want)
			}
		})
	}
}
