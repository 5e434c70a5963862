// Package openapigen writes the published OpenAPI 3.1 document
// (gateway/openapi/openapi.json, served at /openapi.json) from the
// descriptors of the routed RPCs and the words of protoc-gen-openapiv2's
// Swagger 2.0 output. `make generate` runs it (cmd/openapigen) after buf.
//
// Everything the document says about shapes is read from what the gateway
// runs: the routes from the google.api.http bindings (httpmap.Bindings),
// the property types from the fields as pkg/wirejson encodes them (64-bit
// integers as JSON numbers, decimals as numbers, every property present,
// unset messages and optional scalars as null), the success status from
// httpmap.SuccessStatus, the security from the /api/tenants prefix the
// gateway authenticates, the problem document from pkg/problem. What no
// code holds is kept in tables here, and a test fails when they miss an
// operation: the tag of each service (the spec's resource groups) and the
// examples of the recipes. docs/openapi.md says why each choice was made.
package openapigen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/almoner/almoner/gateway/internal/httpmap"
)

// TenantsPrefix starts every path that needs an API key: the gateway
// authenticates every request under it before routing.
const TenantsPrefix = "/api/tenants/"

// SecurityScheme is the name of the X-Api-Key scheme.
const SecurityScheme = "ApiKey"

// CookieScheme is the name of the staff session cookie's scheme: the
// /api/auth routes but sign-in and accepting an invitation, and (beside
// the key) every tenant route.
const CookieScheme = "SessionCookie"

// SessionCookie is the session cookie's name (the auth service sets it).
const SessionCookie = "almoner_session"

// AuthPrefix starts the staff sign-in routes.
const AuthPrefix = "/api/auth/"

// AdminPrefix starts the platform operators' routes: a session cookie
// only, never a key.
const AdminPrefix = "/api/admin/"

// publicAuth are the /api/auth operations that need no session.
var publicAuth = map[string]bool{"AcceptInvitation": true, "SignIn": true, "RequestPasswordReset": true, "ConfirmPasswordReset": true}

// Build returns the OpenAPI 3.1 document of the routes bound in files,
// with the words of the Swagger 2.0 document sw (protoc-gen-openapiv2's
// output for the same protos).
func Build(files *protoregistry.Files, sw []byte) (*openapi3.T, error) {
	s, err := parseSwagger(sw)
	if err != nil {
		return nil, err
	}
	g := &generator{files: files, sw: s, schemas: newSchemas(s), ops: map[string]*operation{}, failuresUsed: map[int]bool{}}
	bindings := httpmap.Bindings(files)
	if len(bindings) == 0 {
		return nil, fmt.Errorf("no RPC has a google.api.http binding")
	}
	for _, b := range bindings {
		if err := g.plan(b); err != nil {
			return nil, fmt.Errorf("%s %s (%s): %w", b.HTTPMethod, b.Template, b.Method.FullName(), err)
		}
	}
	if err := g.planStreamed(); err != nil {
		return nil, err
	}
	if err := g.schemas.assignNames(); err != nil {
		return nil, err
	}
	g.schemas.build()
	return g.document()
}

// Marshal writes doc as the checked-in file: indented, keys sorted, a
// final newline.
func Marshal(doc *openapi3.T) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal the document: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("indent the document: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

type generator struct {
	files   *protoregistry.Files
	sw      *swagger
	schemas *schemas
	// ops are the planned operations by operation id.
	ops   map[string]*operation
	order []string
	// failuresUsed are the failure statuses some operation answers.
	failuresUsed map[int]bool
}

// operation is one route as planned: what its request and response are.
type operation struct {
	b       httpmap.Binding
	path    string
	params  []*openapi3.ParameterRef
	body    *use
	status  int
	respond func() *openapi3.Response
	sw      swaggerOp
	// fixedFailures, when set, are the failure statuses (a streamed
	// route's: streamedOps); otherwise failures works them out.
	fixedFailures []int
	// finish completes the operation (a streamed route's request body).
	finish func(*openapi3.Operation)
}

// plan reads one binding: its path and parameters, and the messages its
// body and response are, so the schemas can be named before any is built.
func (g *generator) plan(b httpmap.Binding) error {
	id := string(b.Method.Name())
	if prev, ok := g.ops[id]; ok {
		return fmt.Errorf("operation id %s is taken by %s", id, prev.b.Method.FullName())
	}
	op := &operation{b: b, status: httpmap.SuccessStatus(id)}
	op.sw, _ = g.sw.operation(b.Method)
	in := b.Method.Input()
	pathFields := map[string]bool{}
	op.path = pathVar.ReplaceAllStringFunc(b.Template, func(v string) string {
		name := pathVar.FindStringSubmatch(v)[1]
		pathFields[name] = true
		return "{" + jsonName(in, name) + "}"
	})
	for _, name := range sortedKeys(pathFields) {
		fd := in.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return fmt.Errorf("path variable %s is no field of %s", name, in.FullName())
		}
		op.params = append(op.params, g.param(op, fd, openapi3.ParameterInPath))
	}
	if err := g.planBody(op, pathFields); err != nil {
		return err
	}
	if err := g.planQuery(op, pathFields); err != nil {
		return err
	}
	if err := g.planResponse(op); err != nil {
		return err
	}
	op.params = append(op.params, headerParams(op.sw)...)
	g.ops[id] = op
	g.order = append(g.order, id)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func jsonName(md protoreflect.MessageDescriptor, protoName string) string {
	if fd := md.Fields().ByName(protoreflect.Name(protoName)); fd != nil {
		return fd.JSONName()
	}
	return protoName
}

// planBody reads the body: the whole request but its path fields ("*"),
// one field's message, or none.
func (g *generator) planBody(op *operation, pathFields map[string]bool) error {
	in := op.b.Method.Input()
	res := httpmap.ResourceOf(op.b.Method)
	var resName protoreflect.FullName
	if res != nil {
		resName = res.FullName()
		g.schemas.descs[resName] = res
	}
	switch op.b.Body {
	case "":
		return nil
	case "*":
		u := use{msg: in.FullName(), dir: request, omit: strings.Join(sortedKeys(pathFields), ",")}
		g.schemas.collect(in, u, resName)
		if d, ok := g.sw.bodyDefinition(op.b.Method); ok {
			g.schemas.bodyDefs[u] = d
		}
		op.body = &u
	default:
		fd := in.Fields().ByName(protoreflect.Name(op.b.Body))
		if fd == nil || fd.Message() == nil || fd.IsList() || fd.IsMap() {
			return fmt.Errorf("body %s is not a message field of %s", op.b.Body, in.FullName())
		}
		if fd.Message().FullName() == httpBodyName {
			return planRawBody(op)
		}
		u := use{msg: fd.Message().FullName(), dir: request}
		g.schemas.collect(fd.Message(), u, resName)
		op.body = &u
	}
	return nil
}

// planQuery reads the query parameters: the request's other top-level
// fields, as the gateway's query parser takes them (not maps, not
// messages but decimals and timestamps); none when the body is the whole
// request.
func (g *generator) planQuery(op *operation, pathFields map[string]bool) error {
	if op.b.Body == "*" {
		return nil
	}
	fields := op.b.Method.Input().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if pathFields[string(fd.Name())] || string(fd.Name()) == op.b.Body || fd.IsMap() {
			continue
		}
		if m := fd.Message(); m != nil && m.FullName() != decimalName && m.FullName() != timestampName {
			continue
		}
		op.params = append(op.params, g.param(op, fd, openapi3.ParameterInQuery))
	}
	return nil
}

// param is a path or query parameter of fd's type.
func (g *generator) param(op *operation, fd protoreflect.FieldDescriptor, in string) *openapi3.ParameterRef {
	sch := g.schemas.singular(fd, request)
	if fd.IsList() {
		sch = openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray}, Items: sch})
	}
	p := &openapi3.Parameter{Name: fd.JSONName(), In: in, Required: in == openapi3.ParameterInPath, Schema: sch}
	// The query codec splits a list's values at commas and also takes
	// the key repeated; the document names the comma form, which the docs
	// and the examples use.
	if fd.IsList() {
		p.Style, p.Explode = openapi3.SerializationForm, ptr(false)
	}
	if c, ok := catalogEnums[fd.FullName()]; ok {
		useCatalog(p.Schema, c)
	}
	for _, sp := range op.sw.Parameters {
		if sp.Name == fd.JSONName() && sp.In == in {
			p.Description = unwrap(sp.Description)
			// A closed set (openapiv2_field enum) stays closed in the
			// query, as the service checks it there too.
			if len(sp.Enum) > 0 {
				setEnum(sch, sp.Enum)
			} else if sp.Items != nil && len(sp.Items.Enum) > 0 {
				setEnum(sch, sp.Items.Enum)
			}
		}
	}
	return &openapi3.ParameterRef{Value: p}
}

// headerParams are the request headers an RPC declares in its
// openapiv2_operation (parameters: {headers: …}): those the gateway
// forwards to the service (forwardedHeaders) and the service reads, such
// as the Idempotency-Key of CreateOrder. A typed client can only send a
// header the document declares.
func headerParams(sw swaggerOp) []*openapi3.ParameterRef {
	var out []*openapi3.ParameterRef
	for _, sp := range sw.Parameters {
		if sp.In != openapi3.ParameterInHeader {
			continue
		}
		typ := sp.Type
		if typ == "" {
			typ = openapi3.TypeString
		}
		out = append(out, &openapi3.ParameterRef{Value: &openapi3.Parameter{
			Name: sp.Name, In: openapi3.ParameterInHeader, Required: sp.Required, Description: unwrap(sp.Description),
			Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{typ}}),
		}})
	}
	return out
}

// planResponse reads what a success answers: nothing (204), a document
// the service renders (google.api.HttpBody, see rawResponses), the field
// response_body names, or the whole output message.
func (g *generator) planResponse(op *operation) error {
	out := op.b.Method.Output()
	desc := op.sw.Responses[strconv.Itoa(op.status)].Description
	if desc == "" {
		desc = http.StatusText(op.status) + "."
	}
	if op.status == http.StatusNoContent {
		op.respond = func() *openapi3.Response { return &openapi3.Response{Description: &desc} }
		return nil
	}
	if out.FullName() == httpBodyName {
		raw, ok := rawResponses[op.b.Method.Name()]
		if !ok {
			return fmt.Errorf("answers google.api.HttpBody, and rawResponses does not say what it holds")
		}
		for _, name := range raw.uses {
			d, err := g.files.FindDescriptorByName(name)
			md, ok := d.(protoreflect.MessageDescriptor)
			if err != nil || !ok {
				return fmt.Errorf("the raw response refers to %s, which is no message: %w", name, err)
			}
			g.schemas.collect(md, use{msg: name, dir: response}, "")
		}
		op.respond = func() *openapi3.Response { return raw.respond(g, desc) }
		return nil
	}
	var sch func() *openapi3.SchemaRef
	switch fd := out.Fields().ByName(protoreflect.Name(op.b.ResponseBody)); {
	case op.b.ResponseBody == "":
		u := use{msg: out.FullName(), dir: response}
		g.schemas.collect(out, u, "")
		sch = func() *openapi3.SchemaRef { return g.schemas.ref(u) }
	case fd == nil:
		return fmt.Errorf("response_body %s is no field of %s", op.b.ResponseBody, out.FullName())
	default:
		if m := fd.Message(); m != nil {
			g.schemas.collect(m, use{msg: m.FullName(), dir: response}, "")
		}
		sch = func() *openapi3.SchemaRef {
			// The field itself, never null at the top of a response.
			if fd.IsList() {
				return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray}, Items: g.schemas.singular(fd, response)})
			}
			return g.schemas.singular(fd, response)
		}
	}
	op.respond = func() *openapi3.Response {
		return &openapi3.Response{Description: &desc, Content: openapi3.NewContentWithJSONSchemaRef(sch())}
	}
	return nil
}

const httpBodyName protoreflect.FullName = "google.api.HttpBody"
