package openapigen

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The rules a generated client needs (issue 35), held over the whole
// published document, gateway/openapi/openapi.json, as `make generate`
// wrote it: every route is checked, those added after this test too.
// docs/openapi.md ("Rules every operation follows") says how a new route
// meets each rule.

// summaryVerbs are the verbs a summary may start with. A new verb is added
// here when a route needs one; a summary that starts with anything else
// (a Go doc sentence, "CreateOrder records…", or a noun) fails.
var summaryVerbs = []string{
	"Accept", "Activate", "Amend", "Ask", "Cancel", "Change", "Check", "Close", "Confirm", "Count", "Correct", "Create",
	"Deactivate", "Delete", "Deliver", "Download", "Email", "End", "Export", "Find", "Forget", "Get", "Grant",
	"Invite", "List", "Make", "Merge", "Pack", "Pass", "Pause", "Preview", "Put", "Read", "Record", "Redeliver",
	"Refund", "Register", "Remove", "Render", "Replace", "Replay", "Resume", "Return", "Revoke", "Run", "Save",
	"Send", "Set", "Ship", "Sign", "Skip", "Split", "Start", "Switch", "Test", "Turn", "Update", "Upload", "Void",
	"Withdraw",
}

// maxSummaryWords bounds a summary: what an integrator types into search.
const maxSummaryWords = 8

// serverSet are property names only the server sets: in a request body, at
// any depth, they must be readOnly (OUTPUT_ONLY in the proto) so a
// generated request type leaves them out. `id` is server-set at the top of
// a body; nested, a row's id may say which row to keep (a contact's
// phones), so it is checked at the top only.
var serverSet = []string{"createdAt", "updatedAt", "deletedAt", "orderNumber", "totalAmount", "refundedAmount", "donationSubtotal", "itemSubtotal", "lastUsedAt"}

// allOptional are the create bodies whose every property is optional, on
// purpose: a refund without an amount refunds the rest, an impersonation
// needs only the tenant, which either of two properties names.
var allOptional = map[string]string{
	"CreateOrderRefund":   "no amount refunds what is left",
	"CreateImpersonation": "tenantId or tenantSlug, exactly one: a oneof the schema cannot require",
}

func publishedDocument(t *testing.T) *openapi3.T {
	t.Helper()
	b, err := os.ReadFile("../../openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSummariesAreTasks: every operation has a summary of at most eight
// words that starts with a verb, with no final period, and its details in
// the description.
func TestSummariesAreTasks(t *testing.T) {
	doc := publishedDocument(t)
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			where := method + " " + path + " (" + op.OperationID + ")"
			words := strings.Fields(op.Summary)
			switch {
			case len(words) == 0:
				t.Errorf("%s: no summary", where)
				continue
			case len(words) > maxSummaryWords:
				t.Errorf("%s: summary %q has %d words, more than %d", where, op.Summary, len(words), maxSummaryWords)
			case !slices.Contains(summaryVerbs, words[0]):
				t.Errorf("%s: summary %q does not start with a verb of summaryVerbs", where, op.Summary)
			case strings.HasSuffix(op.Summary, "."):
				t.Errorf("%s: summary %q ends with a period", where, op.Summary)
			}
			if strings.TrimSpace(op.Description) == "" {
				t.Errorf("%s: no description (the RPC comment after its summary paragraph)", where)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d operations", n)
	}
}

// TestRequestSchemasSayWhatIsRequired: no server-set property in a request
// body without readOnly, and every create body requires something.
// TestRequiredAsDocumented (cmd/almoner/e2e) checks each required list
// against what the server refuses.
func TestRequestSchemasSayWhatIsRequired(t *testing.T) {
	doc := publishedDocument(t)
	bodies := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
				continue
			}
			bodies++
			body := op.RequestBody.Value.Content.Get("application/json").Schema.Value
			where := method + " " + path + " (" + op.OperationID + ")"
			if p := body.Properties["id"]; p != nil && !p.Value.ReadOnly {
				t.Errorf("%s: the body's id is not readOnly: mark it OUTPUT_ONLY", where)
			}
			walkRequest(body, map[*openapi3.Schema]bool{}, func(name string, p *openapi3.Schema) {
				if slices.Contains(serverSet, name) && !p.ReadOnly {
					t.Errorf("%s: %s is set by the server and not readOnly: mark it (google.api.field_behavior) = OUTPUT_ONLY", where, name)
				}
			})
			creates := method == "POST" && strings.HasPrefix(op.OperationID, "Create") && op.Responses.Status(201) != nil
			if _, ok := allOptional[op.OperationID]; creates && !ok && len(body.Required) == 0 && writable(body) > 0 {
				t.Errorf("%s: a create body with no required property: mark what the service needs (google.api.field_behavior) = REQUIRED, or list it in allOptional", where)
			}
		}
	}
	if bodies < 40 {
		t.Fatalf("only %d JSON request bodies", bodies)
	}
}

// walkRequest calls f with every property of s and of the schemas its
// properties hold, once per schema.
func walkRequest(s *openapi3.Schema, seen map[*openapi3.Schema]bool, f func(string, *openapi3.Schema)) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	for name, p := range s.Properties {
		f(name, p.Value)
		if p.Value.ReadOnly {
			continue
		}
		for _, sub := range append(append(openapi3.SchemaRefs{p.Value.Items}, p.Value.OneOf...), p.Value.AllOf...) {
			if sub != nil {
				walkRequest(sub.Value, seen, f)
				if sub.Value.Items != nil {
					walkRequest(sub.Value.Items.Value, seen, f)
				}
			}
		}
		if p.Value.AdditionalProperties.Schema != nil {
			walkRequest(p.Value.AdditionalProperties.Schema.Value, seen, f)
		}
	}
}

func writable(s *openapi3.Schema) int {
	n := 0
	for _, p := range s.Properties {
		if !p.Value.ReadOnly {
			n++
		}
	}
	return n
}

// TestHonouredHeadersAreParameters: an operation whose description says it
// reads a request header declares it as a header parameter, so a typed
// client can send it (openapiv2_operation parameters.headers).
func TestHonouredHeadersAreParameters(t *testing.T) {
	doc := publishedDocument(t)
	found := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, h := range []string{"Idempotency-Key", "If-Match"} {
				if !strings.Contains(op.Description, h) {
					continue
				}
				p := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, h)
				if p == nil {
					t.Errorf("%s %s (%s): the description names %s, and it is no header parameter", method, path, op.OperationID, h)
					continue
				}
				found++
			}
		}
	}
	for _, id := range []string{"CreateOrder", "UploadImport"} {
		if op := operationByID(doc, id); op == nil || op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "Idempotency-Key") == nil {
			t.Errorf("%s: no Idempotency-Key header parameter", id)
		}
	}
	if found < 2 {
		t.Fatalf("only %d header parameters found", found)
	}
}

// TestRecordingGiftsIsPublic: funds and batches, which recording a gift
// needs, are documented in the supported surface.
func TestRecordingGiftsIsPublic(t *testing.T) {
	doc := publishedDocument(t)
	for _, name := range []string{"Funds", "Batches", "Donations and orders"} {
		tag := doc.Tags.Get(name)
		if tag == nil {
			t.Errorf("no tag %s", name)
			continue
		}
		if strings.Contains(tag.Description, outsideSurface) {
			t.Errorf("tag %s is outside the supported surface", name)
		}
	}
}

func operationByID(doc *openapi3.T, id string) *openapi3.Operation {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == id {
				return op
			}
		}
	}
	return nil
}
