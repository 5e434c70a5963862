package webhooks

import (
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/audit"
)

// TestEventBodyImpersonator: a row written through an impersonation gives
// the body data.impersonator_id; any other row none.
func TestEventBodyImpersonator(t *testing.T) {
	for _, tc := range []struct {
		impersonator, want string
	}{
		{"operator:01a2354e-5996-7213-aa54-b6d5f25fc6a9", `"impersonator_id":"operator:01a2354e-5996-7213-aa54-b6d5f25fc6a9"`},
		{"", `"user_id":"user:u1"}`},
	} {
		b, err := buildBody(audit.Event{EventID: "e1", Event: "contact.created", EntityType: "Contact", EntityID: "1", Action: audit.Created,
			Actor: "user:u1", Impersonator: tc.impersonator})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), `"user_id":"user:u1"`) {
			t.Errorf("body %s, want %s", b, tc.want)
		}
	}
}
