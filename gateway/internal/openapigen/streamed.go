package openapigen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/almoner/almoner/gateway/internal/httpmap"
	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/wirejson"
)

// streamedOp is a route the gateway serves by hand, with no
// google.api.http binding to read: a request body streamed into a
// client-streaming RPC (gateway/imports.go). Its words and the closed sets
// of its query live here; the shapes still come from the descriptors (the
// header message's fields are the parameters, the RPC's output the
// response).
type streamedOp struct {
	// rpc is the client-streaming RPC the body feeds.
	rpc protoreflect.FullName
	// httpMethod and template are the route as the gateway registers it.
	httpMethod, template string
	// header is the message of the stream's first request: the path
	// variables and the query parameters are its fields.
	header protoreflect.FullName
	// query are the header fields the query string sets, in order.
	query []streamedParam
	// headers are the HTTP headers that set header fields, by name.
	headers []streamedParam
	// mediaTypes are the bodies the route takes, each a file.
	mediaTypes []string
	// bodyDescription describes the request body.
	bodyDescription string
	// status is the success status.
	status int
	// failures are the failure statuses the route answers.
	failures []int
	// summary and description are the operation's words.
	summary, description string
	// examples are a request body per media type and the success
	// response, as the recipes' (examples.go): the response a message the
	// wire codec encodes.
	examples map[string]string
	response proto.Message
	// definitions are the words of the messages no binding reaches, in
	// openapiv2's form (properties by JSON name), by message.
	definitions map[protoreflect.FullName]swaggerSchema
}

// streamedParam is a header field set by a query parameter or an HTTP
// header.
type streamedParam struct {
	// field is the header message's field (proto name); name is the HTTP
	// header's name, for a header.
	field, name string
	required    bool
	enum        []string
	description string
}

// streamedOps are the routes of gateway/imports.go: a test holds the
// gateway's query parameters to the document's.
var streamedOps = []streamedOp{{
	rpc:        "almoner.imports.v1.ImportService.UploadImport",
	httpMethod: http.MethodPost,
	template:   "/api/tenants/{tenant_id}/imports",
	header:     "almoner.imports.v1.ImportHeader",
	query: []streamedParam{
		{field: "kind", required: true, enum: []string{"contacts", "gifts"}, description: "What the file holds: contacts or gifts."},
		{field: "format", required: true, enum: []string{"csv", "jsonl"}, description: "The file's format: csv (a header row naming the columns) or jsonl (one JSON object per line)."},
		{field: "duplicates", enum: []string{"skip", "update", "create"}, description: "What a contacts import does with a row that matches an existing contact (exact normalized email or phone, or a strong name match at the same postal code): skip (the default), update or create."},
		{field: "dry_run", description: "true validates every row (duplicates and funds included) and writes nothing."},
	},
	headers: []streamedParam{
		{field: "idempotency_key", name: "Idempotency-Key", description: "Makes a re-sent file the same import: the tenant's first import with this key is the answer. The key with another file, kind, format, duplicates or dryRun is a 422 (Import.IdempotencyKeyReused)."},
	},
	mediaTypes:      []string{"text/csv", "application/x-ndjson"},
	bodyDescription: "The file, streamed: CSV with a header row, or JSON Lines, up to 1 GiB (the 1 MiB limit of JSON bodies does not apply). docs/imports.md lists the columns of each kind.",
	status:          http.StatusAccepted,
	failures:        []int{400, 401, 403, 404, 409, 413, 422, 429, 500, 503, 504},
	summary:         "Upload an import file",
	description:     "Queues a bulk import of contacts or gifts from the request body and answers 202 with its id; GET …/imports/{importId} follows it (queued, validating, importing, succeeded or failed) and GET …/imports/{importId}/errors lists the rejected rows. Needs `imports:manage`. A file over 1 GiB is a 413.",
	examples: map[string]string{
		"text/csv":             "externalId,firstName,lastName,email,tags\nCRM-1001,Ada,Lovelace,ada.lovelace@example.org,major donor;newsletter\n",
		"application/x-ndjson": `{"externalId": "CRM-1001", "firstName": "Ada", "lastName": "Lovelace", "email": "ada.lovelace@example.org", "tags": ["major donor", "newsletter"]}` + "\n",
	},
	response: &importsv1.UploadImportResponse{Id: "0197a3c2-a164-7e85-8f70-5d6e7f8091a2", Status: "queued"},
	definitions: map[protoreflect.FullName]swaggerSchema{
		"almoner.imports.v1.UploadImportResponse": {
			Description: "UploadImportResponse is the 202 answer: the import, queued.",
			Properties: map[string]swaggerSchema{
				"id":     {Description: "Id is the import's id."},
				"status": {Description: "Status is `queued` for a new import; a repeated Idempotency-Key answers the first import's status now."},
			},
		},
	},
}}

// planStreamed plans each of streamedOps as an operation: its path and
// parameters from the header message, its response from the RPC's output.
func (g *generator) planStreamed() error {
	for _, s := range streamedOps {
		d, err := g.files.FindDescriptorByName(s.rpc)
		m, ok := d.(protoreflect.MethodDescriptor)
		if err != nil || !ok || !m.IsStreamingClient() || m.IsStreamingServer() {
			return fmt.Errorf("streamed route %s: no client-streaming RPC %s: %w", s.template, s.rpc, err)
		}
		d, err = g.files.FindDescriptorByName(s.header)
		hdr, ok := d.(protoreflect.MessageDescriptor)
		if err != nil || !ok {
			return fmt.Errorf("streamed route %s: no header message %s: %w", s.template, s.header, err)
		}
		if err := g.planStreamedOp(s, m, hdr); err != nil {
			return fmt.Errorf("%s %s (%s): %w", s.httpMethod, s.template, s.rpc, err)
		}
	}
	return nil
}

// planStreamedOp plans one streamed route: its parameters from the
// header message's fields, its response from the RPC's output, its body
// the files it takes.
func (g *generator) planStreamedOp(s streamedOp, m protoreflect.MethodDescriptor, hdr protoreflect.MessageDescriptor) error {
	id := string(m.Name())
	if prev, ok := g.ops[id]; ok {
		return fmt.Errorf("operation id %s is taken by %s", id, prev.b.Method.FullName())
	}
	op := &operation{
		b:      httpmap.Binding{Method: m, HTTPMethod: s.httpMethod, Template: s.template},
		status: s.status,
		sw: swaggerOp{Summary: s.summary, Description: s.description, Responses: map[string]swaggerResponse{
			"413": {Description: "The file is larger than 1 GiB."},
		}},
		fixedFailures: s.failures,
	}
	if err := g.streamedParams(op, s, hdr); err != nil {
		return err
	}
	respond, err := g.streamedResponse(s, m)
	if err != nil {
		return err
	}
	op.respond = respond
	op.finish = func(o *openapi3.Operation) { o.RequestBody = streamedBody(s, m) }
	g.ops[id] = op
	g.order = append(g.order, id)
	return nil
}

// headerField is the field of the header message hdr named name.
func headerField(hdr protoreflect.MessageDescriptor, name string) (protoreflect.FieldDescriptor, error) {
	fd := hdr.Fields().ByName(protoreflect.Name(name))
	if fd == nil {
		return nil, fmt.Errorf("%s is no field of %s", name, hdr.FullName())
	}
	return fd, nil
}

// streamedParams sets op's path (its variables named by their JSON
// names) and its path, query and header parameters, each from its field
// of the header message.
func (g *generator) streamedParams(op *operation, s streamedOp, hdr protoreflect.MessageDescriptor) error {
	var perr error
	op.path = pathVar.ReplaceAllStringFunc(s.template, func(v string) string {
		fd, err := headerField(hdr, pathVar.FindStringSubmatch(v)[1])
		if err != nil {
			perr = err
			return v
		}
		p := g.param(op, fd, openapi3.ParameterInPath)
		p.Value.Description = "The tenant of the key."
		op.params = append(op.params, p)
		return "{" + fd.JSONName() + "}"
	})
	if perr != nil {
		return perr
	}
	for _, q := range s.query {
		fd, err := headerField(hdr, q.field)
		if err != nil {
			return err
		}
		p := g.param(op, fd, openapi3.ParameterInQuery)
		p.Value.Required, p.Value.Description = q.required, q.description
		if len(q.enum) > 0 {
			setEnum(p.Value.Schema, q.enum)
		}
		op.params = append(op.params, p)
	}
	for _, h := range s.headers {
		fd, err := headerField(hdr, h.field)
		if err != nil {
			return err
		}
		op.params = append(op.params, &openapi3.ParameterRef{Value: &openapi3.Parameter{
			Name: h.name, In: openapi3.ParameterInHeader, Required: h.required, Description: h.description,
			Schema: g.schemas.singular(fd, request),
		}})
	}
	return nil
}

// streamedResponse collects the schema of the RPC's output (with the
// route's words for the messages no binding reaches) and returns the
// success response, with the route's example in the wire codec.
func (g *generator) streamedResponse(s streamedOp, m protoreflect.MethodDescriptor) (func() *openapi3.Response, error) {
	out := use{msg: m.Output().FullName(), dir: response}
	g.schemas.collect(m.Output(), out, "")
	for name, def := range s.definitions {
		g.schemas.words[name] = def
	}
	var example any
	if s.response != nil {
		b, err := wirejson.Marshal(s.response)
		if err != nil {
			return nil, fmt.Errorf("example response: %w", err)
		}
		if err := json.Unmarshal(b, &example); err != nil {
			return nil, fmt.Errorf("example response: %w", err)
		}
	}
	desc := "Accepted: the import is queued."
	return func() *openapi3.Response {
		content := openapi3.NewContentWithJSONSchemaRef(g.schemas.ref(out))
		if example != nil {
			content.Get("application/json").Examples = openapi3.Examples{string(m.Name()): {Value: &openapi3.Example{Summary: "Queued", Value: example}}}
		}
		return &openapi3.Response{Description: &desc, Content: content}
	}, nil
}

// streamedBody is the route's request body: one file of each media type
// it takes, with its example.
func streamedBody(s streamedOp, m protoreflect.MethodDescriptor) *openapi3.RequestBodyRef {
	content := openapi3.Content{}
	for _, mt := range slices.Sorted(slices.Values(s.mediaTypes)) {
		content[mt] = file(mt)
		if ex, ok := s.examples[mt]; ok {
			content[mt].Examples = openapi3.Examples{string(m.Name()): {Value: &openapi3.Example{Summary: "A contact", Value: ex}}}
		}
	}
	return &openapi3.RequestBodyRef{Value: &openapi3.RequestBody{Description: s.bodyDescription, Required: true, Content: content}}
}
