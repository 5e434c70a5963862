package openapigen

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/almoner/almoner/gateway/internal/httpmap"
	_ "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
)

// build makes the document without the Swagger words: every fact of the
// document comes from the descriptors and the tables, so it must build.
func build(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := Build(protoregistry.GlobalFiles, []byte(`{"info": {"title": "Almoner API", "version": "1", "description": "test"}}`))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return doc
}

// TestEveryRouteIsAnOperation: each binding is one operation with its
// RPC's name as id, the gateway's success status, a spec group, and the
// key on exactly the /api/tenants routes. Serves also as the check that
// serviceGroups and rawResponses miss no service or RPC (Build fails).
func TestEveryRouteIsAnOperation(t *testing.T) {
	doc := build(t)
	bindings := httpmap.Bindings(protoregistry.GlobalFiles)
	if len(bindings) < 40 {
		t.Fatalf("only %d bindings", len(bindings))
	}
	for _, b := range bindings {
		path := pathVar.ReplaceAllStringFunc(b.Template, func(v string) string {
			return "{" + jsonName(b.Method.Input(), pathVar.FindStringSubmatch(v)[1]) + "}"
		})
		item := doc.Paths.Value(path)
		if item == nil || item.GetOperation(b.HTTPMethod) == nil {
			t.Errorf("%s %s: no operation", b.HTTPMethod, path)
			continue
		}
		op := item.GetOperation(b.HTTPMethod)
		if op.OperationID != string(b.Method.Name()) {
			t.Errorf("%s %s: operationId %s, want %s", b.HTTPMethod, path, op.OperationID, b.Method.Name())
		}
		want := httpmap.SuccessStatus(string(b.Method.Name()))
		if op.Responses.Status(want) == nil {
			t.Errorf("%s: no %d response", op.OperationID, want)
		}
		for code := range op.Responses.Map() {
			if code[0] == '2' && code != strconv.Itoa(want) {
				t.Errorf("%s: documents success %s besides %d", op.OperationID, code, want)
			}
		}
		if len(op.Tags) != 1 || !knownGroup(op.Tags[0]) {
			t.Errorf("%s: tags %v", op.OperationID, op.Tags)
		}
		keyed := op.Security != nil && len(*op.Security) == 2
		if tenant := strings.HasPrefix(path, TenantsPrefix); keyed != tenant || op.Security == nil {
			t.Errorf("%s: security %v on %s", op.OperationID, op.Security, path)
		}
		for _, code := range []int{400, 500, 503} {
			if op.Responses.Status(code) == nil {
				t.Errorf("%s: no %d", op.OperationID, code)
			}
		}
	}
}

func knownGroup(name string) bool {
	for _, g := range serviceGroups {
		if g.name == name {
			return true
		}
	}
	return false
}

// TestDocumentIsValid validates the document (and its examples) as
// OpenAPI 3.1 with kin-openapi.
func TestDocumentIsValid(t *testing.T) {
	doc := build(t)
	b, err := Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := loaded.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

// TestWireTypes pins the facts issue 15 found wrong in the Swagger 2.0
// document: 64-bit integers are integers, amounts numbers, creates 201.
func TestWireTypes(t *testing.T) {
	doc := build(t)
	contact := doc.Components.Schemas["Contact"].Value
	if id := contact.Properties["id"].Value; !id.Type.Is(openapi3.TypeInteger) || id.Format != "int64" {
		t.Errorf("Contact.id = %v %s, want integer int64", id.Type, id.Format)
	}
	order := doc.Components.Schemas["Order"].Value
	total := order.Properties["totalAmount"].Value
	if !total.Type.Includes(openapi3.TypeNumber) || total.Format != DecimalFormat {
		t.Errorf("Order.totalAmount = %v %s, want number decimal", total.Type, total.Format)
	}
	if len(order.Required) != len(order.Properties) {
		t.Errorf("Order requires %d of %d properties; the codec writes every one", len(order.Required), len(order.Properties))
	}
	for _, id := range []string{"CreateOrder", "CreateOrderRefund", "CreateFund", "CreateBatch", "CreateReport"} {
		if op := findOperation(doc, id); op == nil || op.Responses.Status(201) == nil {
			t.Errorf("%s: no 201", id)
		}
	}
}

// TestImportUpload: the streamed upload, which no binding describes, is an
// operation as the gateway serves it (gateway/imports.go): its query
// parameters with their closed sets, the Idempotency-Key header, a file
// body of either format, the 202 and the failures it answers.
func TestImportUpload(t *testing.T) {
	doc := build(t)
	item := doc.Paths.Value("/api/tenants/{tenantId}/imports")
	if item == nil || item.Post == nil {
		t.Fatal("no POST /api/tenants/{tenantId}/imports")
	}
	op := item.Post
	if op.OperationID != "UploadImport" || len(op.Tags) != 1 || op.Tags[0] != "Imports" || op.Security == nil || len(*op.Security) != 2 {
		t.Errorf("operation %s, tags %v, security %v", op.OperationID, op.Tags, op.Security)
	}
	want := map[string]string{"path tenantId": "true []", "query kind": "true [contacts gifts]", "query format": "true [csv jsonl]",
		"query duplicates": "false [skip update create]", "query dryRun": "false []", "header Idempotency-Key": "false []"}
	got := map[string]string{}
	for _, p := range op.Parameters {
		got[p.Value.In+" "+p.Value.Name] = fmt.Sprint(p.Value.Required, " ", p.Value.Schema.Value.Enum)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parameters %v, want %v", got, want)
	}
	if dry := op.Parameters.GetByInAndName("query", "dryRun"); dry == nil || !dry.Schema.Value.Type.Is(openapi3.TypeBoolean) {
		t.Errorf("dryRun is not a boolean")
	}
	body := op.RequestBody.Value
	for _, mt := range []string{"text/csv", "application/x-ndjson"} {
		if c := body.Content.Get(mt); c == nil || !c.Schema.Value.Type.Is(openapi3.TypeString) {
			t.Errorf("no %s string body", mt)
		}
	}
	if !body.Required || len(body.Content) != 2 {
		t.Errorf("body %+v", body)
	}
	ok := op.Responses.Status(202)
	if ok == nil || ok.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/UploadImportResponse" {
		t.Fatalf("202: %+v", ok)
	}
	resp := doc.Components.Schemas["UploadImportResponse"].Value
	if len(resp.Required) != 2 || resp.Properties["status"].Value.Description == "" {
		t.Errorf("UploadImportResponse %+v", resp)
	}
	var codes []int
	for code := range op.Responses.Map() {
		n, _ := strconv.Atoi(code)
		codes = append(codes, n)
	}
	sort.Ints(codes)
	if fmt.Sprint(codes) != "[202 400 401 403 404 409 413 422 429 500 503 504]" {
		t.Errorf("responses %v", codes)
	}
}
