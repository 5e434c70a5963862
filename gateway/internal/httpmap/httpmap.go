// Package httpmap holds the facts of the REST mapping that both the gateway
// and the OpenAPI document generator (internal/openapigen) read, so the
// document says what the gateway does: which RPCs have routes and with
// which binding (from the protos' google.api.http options), the status a
// successful call answers, and the resource whose properties a create or
// replace body may carry back.
package httpmap

import (
	"net/http"
	"sort"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Binding is one google.api.http binding of an RPC: a route.
type Binding struct {
	// Method is the RPC.
	Method protoreflect.MethodDescriptor
	// HTTPMethod is GET, POST, PUT, PATCH or DELETE.
	HTTPMethod string
	// Template is the path template as written in the proto
	// (`/api/tenants/{tenant_id}/orders`).
	Template string
	// Body is the binding's body: "*" (the whole request), a field's proto
	// name, or "" when the route takes no body.
	Body string
	// ResponseBody is the output field the response carries, or "" for
	// the whole output message.
	ResponseBody string
}

// Bindings returns every binding of the RPCs of the almoner.* packages in
// files, ordered by template and method.
func Bindings(files *protoregistry.Files) []Binding {
	var out []Binding
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "almoner.") {
			return true
		}
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				rule, ok := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
				if !ok || rule == nil {
					continue
				}
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					if b, ok := bindingOf(m, r); ok {
						out = append(out, b)
					}
				}
			}
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Template != out[j].Template {
			return out[i].Template < out[j].Template
		}
		return out[i].HTTPMethod < out[j].HTTPMethod
	})
	return out
}

func bindingOf(m protoreflect.MethodDescriptor, r *annotations.HttpRule) (Binding, bool) {
	b := Binding{Method: m, Body: r.GetBody(), ResponseBody: r.GetResponseBody()}
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		b.HTTPMethod, b.Template = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		b.HTTPMethod, b.Template = http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		b.HTTPMethod, b.Template = http.MethodPut, p.Put
	case *annotations.HttpRule_Patch:
		b.HTTPMethod, b.Template = http.MethodPatch, p.Patch
	case *annotations.HttpRule_Delete:
		b.HTTPMethod, b.Template = http.MethodDelete, p.Delete
	case *annotations.HttpRule_Custom:
		b.HTTPMethod, b.Template = p.Custom.GetKind(), p.Custom.GetPath()
	default:
		return Binding{}, false
	}
	return b, true
}

// SuccessStatus is the status of a successful call of the RPC named name
// (`CreateOrder`), from its verb: Create… answers 201 Created, Delete…
// and Revoke… 204 No Content (and no body), Redeliver…, Replay… and
// StartTaxStatementRun and StartLetterRun 202 Accepted (they queue work that happens later),
// others 200.
func SuccessStatus(name string) int {
	switch {
	case strings.HasPrefix(name, "Create"):
		return http.StatusCreated
	case strings.HasPrefix(name, "Redeliver"), strings.HasPrefix(name, "Replay"), name == "StartTaxStatementRun", name == "StartLetterRun",
		name == "RequestPasswordReset", name == "EnableMfaEmail", name == "SendMfaEmailCode":
		return http.StatusAccepted
	case strings.HasPrefix(name, "Delete"), strings.HasPrefix(name, "Revoke"), name == "SignOut", name == "ConfirmPasswordReset":
		return http.StatusNoContent
	}
	return http.StatusOK
}

// ResourceOf returns the resource an RPC creates or replaces, whose
// properties its body may carry back unchanged: for Create<X> and
// Update<X>, the message X of the RPC's package (Contact for
// CreateContact and UpdateContact: what a GET returns). Other RPCs, and
// those whose X is not a message (CreateOrderRefund: a refund is not an
// order), have none: a refund body with an order's `id` is refused, not
// read as though it chose something.
func ResourceOf(m protoreflect.MethodDescriptor) protoreflect.MessageDescriptor {
	name := string(m.Name())
	x, ok := strings.CutPrefix(name, "Create")
	if !ok {
		if x, ok = strings.CutPrefix(name, "Update"); !ok {
			return nil
		}
	}
	pkg := m.ParentFile().Package()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(pkg.Append(protoreflect.Name(x)))
	if err != nil {
		return nil
	}
	md, _ := d.(protoreflect.MessageDescriptor)
	return md
}
