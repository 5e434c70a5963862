package gateway

import (
	"errors"
	"io"
	"net/url"
	"regexp"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/almoner/almoner/gateway/internal/httpmap"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/wirejson"
)

// requestRule is what one route's request may carry, read from its RPC's
// descriptor and google.api.http binding: which query parameters, and
// which body properties besides the fields of the body's message.
type requestRule struct {
	// rpc is the RPC's full name, for tests and messages.
	rpc protoreflect.FullName
	// input is the RPC's request message.
	input protoreflect.MessageType
	// pathFields are the request fields the path sets (proto names).
	pathFields map[string]bool
	// bodyField is the binding's body: "*" (the whole request), a field's
	// proto name, or "" when the route takes no body.
	bodyField string
	// body says what the body may carry besides its message's fields.
	body wirejson.Options
}

// skipQuery reports whether the query string may not set the request
// field name: the path or the body sets it (grpc-gateway's generated
// handlers pass the same set to the query parser).
func (rr *requestRule) skipQuery(name string) bool {
	return rr.bodyField == "*" || rr.pathFields[name] || name == rr.bodyField
}

// checkQuery refuses a query string that does not parse, or that names a
// parameter the request does not read, before the body is read: also on
// routes whose generated handler never reads the query string (a GET of
// one resource, a POST whose body is the whole request), where it would
// otherwise be ignored. The values are decoded into a scratch request,
// so a bad value is refused here too, under its name.
func (rr *requestRule) checkQuery(rawQuery string) error {
	if rawQuery == "" {
		return nil
	}
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return invalid(&wirejson.DecodeError{Violations: []apperr.Violation{{Field: "", Message: "The query string is not valid."}}})
	}
	if err := wirejson.UnmarshalQuery(values, rr.input.New().Interface(), rr.skipQuery); err != nil {
		return invalid(err)
	}
	return nil
}

// invalid is err as the generated handlers report a decoding error: an
// INVALID_ARGUMENT status with its text, which the error handler renders
// as a 400 with the DecodeError's violations.
func invalid(err error) error { return status.Error(codes.InvalidArgument, err.Error()) }

// checkBodyless refuses a body with properties on a route that takes no
// body: its generated handler would discard them unread. An empty object
// passes, as clients send one with a bare POST.
func (rr *requestRule) checkBodyless(data []byte) error {
	if err := wirejson.Unmarshal(data, &emptypb.Empty{}); err != nil && !errors.Is(err, io.EOF) {
		return invalid(err)
	}
	return nil
}

// routeBinding names a route as the mux matched it: the method and the path
// template with its variables bare (`/api/tenants/{tenant_id}/orders`).
type routeBinding struct{ method, template string }

// patternVar matches a path variable with its optional segment pattern,
// `{tenant_id}` or `{tenant_id=*}`.
var patternVar = regexp.MustCompile(`\{([^}=]+)(=[^}]*)?\}`)

// bareTemplate removes the segment patterns of a template's variables, so
// that a binding's template and grpc-gateway's Pattern.String() compare.
func bareTemplate(t string) string { return patternVar.ReplaceAllString(t, "{$1}") }

// requestRules returns the rule of every route the protos bind, built
// once from the descriptors linked into the binary (every routed service's
// generated package is, through registry).
var requestRules = sync.OnceValue(func() map[routeBinding]*requestRule {
	out := map[routeBinding]*requestRule{}
	for _, b := range httpmap.Bindings(protoregistry.GlobalFiles) {
		if rr, ok := ruleOf(b); ok {
			out[routeBinding{b.HTTPMethod, bareTemplate(b.Template)}] = rr
		}
	}
	return out
})

// ruleOf reads one binding.
func ruleOf(b httpmap.Binding) (*requestRule, bool) {
	input, err := protoregistry.GlobalTypes.FindMessageByName(b.Method.Input().FullName())
	if err != nil {
		return nil, false
	}
	rr := &requestRule{rpc: b.Method.FullName(), input: input, pathFields: map[string]bool{}, bodyField: b.Body}
	for _, v := range patternVar.FindAllStringSubmatch(b.Template, -1) {
		rr.pathFields[v[1]] = true
	}
	rr.body.Resource = httpmap.ResourceOf(b.Method)
	if rr.bodyField == "*" {
		rr.body.Bound = func(name string) bool { return rr.pathFields[name] }
	}
	return rr, true
}
