package templates

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
)

func sample() map[string]any {
	return map[string]any{
		"contact": map[string]any{"firstName": "Zoë", "lastName": "Müller", "salutation": "Dear Zoë",
			"address": map[string]any{"line1": "1 Main St", "city": "Springfield"}},
		"gift":         map[string]any{"amount": "USD 80.00", "fund": "General", "tribute": map[string]any{"type": "InMemoryOf", "name": "Ada"}},
		"organization": map[string]any{"legalName": "Friends <of> the Library"},
		"today":        "2026-12-02",
		"gifts":        []any{map[string]any{"amount": "USD 1.00"}, map[string]any{"amount": "USD 2.00"}},
		"total":        "USD 3.00",
	}
}

// bodyError is the Body violation of err, or "".
func bodyError(t *testing.T, err error) string {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || len(ae.Violations) != 1 || ae.Violations[0].Field != "Body" {
		t.Fatalf("err = %v, want one violation of Body", err)
	}
	return ae.Violations[0].Message
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, kind, body, want string
	}{
		{"unknown field", KindAcknowledgement, "Dear {{contact.firstName}},\n\nThanks for {{gift.amont}}.", "Line 3: 'gift.amont'"},
		{"unclosed section", KindAcknowledgement, "a\nb\n{{#gift.fund}}\nc", "Line "},
		{"unclosed tag", KindAcknowledgement, "a\n{{contact.firstName", "Line 2"},
		{"partial", KindAcknowledgement, "ok\n{{> /etc/passwd}}", "Line 2: Partials"},
		{"delimiters", KindAcknowledgement, "{{=<% %>=}}\n<% contact.firstName %>", "Line 1: Changing the delimiters"},
		{"gifts in a receipt", KindReceipt, "{{#gifts}}{{amount}}{{/gifts}}", "Line 1: 'gifts'"},
		{"gifts as a variable", KindStatement, "x\n{{gifts}}", "Line 2: 'gifts'"},
		{"gifts inside gifts", KindStatement, "{{#gifts}}\n{{#gifts}}{{amount}}{{/gifts}}{{/gifts}}", "Line 2: 'gifts'"},
		{"gift field outside gifts", KindStatement, "{{amount}}", "'amount'"},
		{"env", KindAcknowledgement, "{{HOME}}", "'HOME'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.kind, tc.body)
			if msg := bodyError(t, err); !strings.HasPrefix(msg, tc.want) && !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q, want %q", msg, tc.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	ack := "{{contact.salutation}},\n{{organization.legalName}} thanks you for {{gift.amount}} to {{gift.fund}}" +
		"{{#gift.tribute.name}} in memory of {{gift.tribute.name}}{{/gift.tribute.name}}.\n{{contact.address.postalCode}}"
	tmpl, err := Parse(KindAcknowledgement, ack)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(context.Background(), tmpl, sample())
	if err != nil {
		t.Fatal(err)
	}
	// Text bodies are not HTML-escaped: the PDF prints the name as it is.
	if want := "Dear Zoë,\nFriends <of> the Library thanks you for USD 80.00 to General in memory of Ada.\n"; out != want {
		t.Fatalf("out = %q, want %q", out, want)
	}
	st, err := Parse(KindStatement, "{{#gifts}}{{amount}};{{contact.firstName}} {{/gifts}}= {{total}}")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Render(context.Background(), st, sample()); err != nil || out != "USD 1.00;Zoë USD 2.00;Zoë = USD 3.00" {
		t.Fatalf("statement = %q, %v", out, err)
	}
}

// TestRenderLimits: output past 1 MiB fails the document.
func TestRenderLimits(t *testing.T) {
	body := "{{#gifts}}{{amount}}{{/gifts}}"
	tmpl, err := Parse(KindStatement, body)
	if err != nil {
		t.Fatal(err)
	}
	// Three variables of 512 KiB: past the limit in a few writes, well
	// inside the time limit even under the race detector.
	gifts := make([]any, 3)
	for i := range gifts {
		gifts[i] = map[string]any{"amount": strings.Repeat("9", 512<<10)}
	}
	d := sample()
	d["gifts"] = gifts
	// The size limit, not the time limit: mustache drops a variable's
	// write error, and under -race a slow render once hid that.
	if _, err := Render(context.Background(), tmpl, d); !errors.Is(err, ErrRender) || !errors.Is(err, errTooLong) {
		t.Fatalf("err = %v, want ErrRender for the size", err)
	}
}
