package e2e

import (
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestRequiredAsDocumented holds every JSON body of the served document to
// what the services refuse: for each tenant operation it sends an empty
// body ({}), and for each property that is an object or a list of objects
// a body with that property empty ({"payments": [{}]}), and every property
// the 400 names as missing or wrong in that empty object must be listed as
// required there. A generated client then makes an integrator fill what
// the server needs (issue 35). It reads the document, so a route added
// later is probed too. The other direction, a property listed as required
// that the server does without, is the contract checker's: every exchange
// of the e2e tests that the gateway accepts must be valid by the document
// (apptest/contract.go).
func TestRequiredAsDocumented(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tenant := c.NewTenant(t)
	resp := c.Do(t, "GET", "/openapi.json", "", nil).Expect(t, http.StatusOK)
	doc, err := openapi3.NewLoader().LoadFromData(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := &requiredProbe{c: c, tenant: tenant, doc: doc}
	for _, path := range doc.Paths.InMatchingOrder() {
		if !strings.HasPrefix(path, "/api/tenants/") {
			continue
		}
		for method, op := range doc.Paths.Value(path).Operations() {
			p.operation(t, method, path, op)
		}
	}
	// Most operations answer a 400 naming what is missing; a few need a
	// resource first (a 404 for the made-up id), which is fine, but the
	// probe must have held some lists to be a test at all.
	if p.checked < 40 || p.bodies < 20 {
		t.Fatalf("the probe checked %d properties of %d bodies: it tests too little", p.checked, p.bodies)
	}
	t.Logf("%d bodies, %d properties named by a 400 checked against their required lists", p.bodies, p.checked)
}

// notInSchema are the properties the server needs in one case only, which
// a schema shared by several operations cannot require: one of two
// properties (a generated client would demand one in particular), or a
// message that a create and a replace share. Their descriptions say it.
var notInSchema = map[string]string{
	"CreateReport.typeKey":                         "or dataSourceKey, the reference system's name for it",
	"CreateDocumentTemplate.kind":                  "DocumentTemplateInput also replaces a template, whose kind stays",
	"CreateOrder.recurringDonations.paymentMethod": "defaults to the order's first payment's, and payments are required",
}

type requiredProbe struct {
	c       *apptest.Cluster
	tenant  apptest.Tenant
	doc     *openapi3.T
	checked int
	bodies  int
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// operation probes one operation's JSON body, if it has one.
func (p *requiredProbe) operation(t *testing.T, method, path string, op *openapi3.Operation) {
	if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
		return
	}
	body := op.RequestBody.Value.Content.Get("application/json").Schema.Value
	url := pathParam.ReplaceAllStringFunc(path, func(v string) string {
		name := v[1 : len(v)-1]
		if name == "tenantId" {
			return p.tenant.ID
		}
		for _, prm := range op.Parameters {
			if prm.Value.Name == name && prm.Value.Schema.Value.Type.Is(openapi3.TypeInteger) {
				return "1"
			}
		}
		return "00000000-0000-4000-8000-000000000001"
	})
	p.bodies++
	p.check(t, op.OperationID, body, "", p.send(t, method, url, map[string]any{}))
	for _, name := range slices.Sorted(maps.Keys(body.Properties)) {
		prop := objectOf(body.Properties[name].Value)
		if prop == nil || prop.ReadOnly {
			continue
		}
		var value any = map[string]any{}
		prefix := pascal(name) + "."
		if body.Properties[name].Value.Type.Is(openapi3.TypeArray) {
			value, prefix = []any{map[string]any{}}, pascal(name)+"[0]."
		}
		p.check(t, op.OperationID+"."+name, prop, prefix, p.send(t, method, url, map[string]any{name: value}))
	}
}

// send sends a body and returns the 400's errors (nil for another status).
func (p *requiredProbe) send(t *testing.T, method, url string, body any) map[string][]string {
	resp := p.c.Do(t, method, url, p.tenant.Key, body)
	if resp.Status >= http.StatusInternalServerError {
		// An empty body is the commonest mistake a client makes; it
		// must be a 4xx (a nil filter in StartLetterRun was a panic).
		t.Errorf("%s %s with %v: %d %s", method, url, body, resp.Status, resp.Body)
	}
	if resp.Status != http.StatusBadRequest {
		return nil
	}
	var prob struct {
		Errors map[string][]string `json:"errors"`
	}
	if err := json.Unmarshal(resp.Body, &prob); err != nil {
		t.Fatalf("%s %s: 400 is no problem document: %s", method, url, resp.Body)
	}
	return prob.Errors
}

// check fails for each property of sch that errors names (under prefix,
// one level down) and sch does not list as required.
func (p *requiredProbe) check(t *testing.T, where string, sch *openapi3.Schema, prefix string, errors map[string][]string) {
	for key, msgs := range errors {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok || rest == "" || strings.ContainsAny(rest, ".[") {
			continue
		}
		for name := range sch.Properties {
			if !strings.EqualFold(name, rest) || sch.Properties[name].Value.ReadOnly {
				continue
			}
			p.checked++
			if _, ok := notInSchema[where+"."+name]; !ok && !slices.Contains(sch.Required, name) {
				t.Errorf("%s: the server refuses an empty body with %q %v, and %s is not required in the document: mark it (google.api.field_behavior) = REQUIRED (docs/openapi.md)", where, key, msgs, name)
			}
		}
	}
}

// objectOf is the object schema a property holds: itself, its items, or
// the non-null member of a nullable reference.
func objectOf(s *openapi3.Schema) *openapi3.Schema {
	if s.Items != nil {
		s = s.Items.Value
	}
	for _, alt := range append(slices.Clone(s.OneOf), s.AllOf...) {
		if alt.Value != nil && alt.Value.Type.Is(openapi3.TypeObject) {
			s = alt.Value
		}
	}
	if s.Type.Is(openapi3.TypeObject) && len(s.Properties) > 0 {
		return s
	}
	return nil
}

func pascal(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
