package openapigen

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/almoner/almoner/pkg/problem"
)

// group is a tag: a resource group as the spec names it.
type group struct {
	name string
	// public groups are the spec's supported public surface; the others
	// carry no stability promise.
	public bool
}

// serviceGroups gives each routed service its group. The names are the
// spec's ("Supported public resource groups", "Groups outside the
// supported public surface"); the order is the spec's. A service missing
// here fails generation.
var serviceGroups = map[protoreflect.FullName]group{
	"almoner.contacts.v1.ContactService":            {"Contacts", true},
	"almoner.orders.v1.OrderService":                {"Donations and orders", true},
	"almoner.orders.v1.OrderAcknowledgementService": {"Donations and orders", true},
	"almoner.orders.v1.RecurringDonationService":    {"Recurring donations", true},
	"almoner.inventory.v1.InventoryService":         {"Inventory items", true},
	"almoner.reports.v1.ReportService":              {"Reports", true},
	"almoner.webhooks.v1.WebhookService":            {"Webhooks", true},
	"almoner.webhooks.v1.EventService":              {"Events", true},
	"almoner.auth.v1.ApiKeyService":                 {"API keys", true},
	"almoner.orders.v1.FundService":                 {"Funds", true},
	"almoner.orders.v1.PaymentMethodService":        {"Payment methods", false},
	"almoner.orders.v1.BatchService":                {"Batches", true},
	"almoner.inventory.v1.ShipmentService":          {"Fulfillment", false},
	"almoner.reports.v1.FulfillmentDocumentService": {"Fulfillment", false},
	"almoner.contacts.v1.ContactFormService":        {"Marketing form", false},
	"almoner.reports.v1.OrganizationProfileService": {"Tenant administration", false},
	"almoner.reports.v1.BrandingService":            {"Tenant administration", false},
	"almoner.reports.v1.DocumentTemplateService":    {"Tenant administration", false},
	"almoner.reports.v1.LetterRunService":           {"Tenant administration", false},
	"almoner.reports.v1.CohortService":              {"Cohorts", false},
	"almoner.reports.v1.ReceiptService":             {"Tax statements", false},
	"almoner.reports.v1.TaxStatementService":        {"Tax statements", false},
	"almoner.reports.v1.DashboardService":           {"Dashboards and cohorts", false},
	"almoner.imports.v1.ImportService":              {"Imports", false},
	"almoner.auth.v1.UserService":                   {"Users", false},
	"almoner.auth.v1.StaffAuthService":              {"Staff sign-in", false},
	"almoner.auth.v1.MfaService":                    {"Multi-factor authentication", false},
	"almoner.auth.v1.TenantAdminService":            {"Platform operators", false},
	"almoner.auth.v1.ImpersonationService":          {"Platform operators", false},
	"almoner.auth.v1.OperationsService":             {"Platform operators", false},
	"almoner.auth.v1.SupportAccessService":          {"Tenant administration", false},
	"almoner.auth.v1.TenantSettingsService":         {"Tenant administration", false},
	"almoner.webhooks.v1.AuditLogService":           {"Audit log", false},
}

var groupOrder = []string{"Contacts", "Donations and orders", "Funds", "Batches", "Recurring donations", "Inventory items", "Reports", "Webhooks", "Events", "API keys", "Payment methods", "Tenant administration", "Tax statements", "Imports", "Fulfillment", "Marketing form", "Dashboards and cohorts", "Cohorts", "Users", "Staff sign-in", "Multi-factor authentication", "Platform operators", "Audit log"}

// recordingGifts introduces the groups an integrator needs to record a
// gift besides orders (issue 35): every donation line names a fund, and a
// gift may be posted into a batch. They are documented with orders, in the
// supported surface, although the spec lists batches with fulfillment.
var recordingGifts = map[string]string{
	"Funds":   "Part of recording gifts: every donation line of an order names a fund (`fundId`); list the funds, or create one, before the first gift.",
	"Batches": "Part of recording gifts: a batch groups the gifts of one deposit (`batchId` on an order), and closing it freezes its totals for reconciliation.",
}

// outsideSurface is said of every group outside the supported surface.
const outsideSurface = "Outside the supported public surface: its shape, scope or existence may change without notice."

// errorResponse is a failure status the gateway answers, with the problem
// category it renders (pkg/problem).
type errorResponse struct {
	status   int
	name     string
	category string
}

// errorResponses are the components of the failures, by status.
var errorResponses = []errorResponse{
	{http.StatusBadRequest, "BadRequest", problem.CategoryValidation},
	{http.StatusUnauthorized, "Unauthorized", problem.CategoryUnauthorized},
	{http.StatusForbidden, "Forbidden", problem.CategoryForbidden},
	{http.StatusNotFound, "NotFound", problem.CategoryNotFound},
	{http.StatusConflict, "Conflict", problem.CategoryConflict},
	{http.StatusGone, "Gone", problem.CategoryGone},
	{http.StatusRequestEntityTooLarge, "PayloadTooLarge", problem.CategoryTooLarge},
	{http.StatusUnsupportedMediaType, "UnsupportedMediaType", problem.CategoryUnsupportedMedia},
	{http.StatusUnprocessableEntity, "UnprocessableEntity", problem.CategoryUnprocessable},
	{http.StatusTooManyRequests, "TooManyRequests", ""},
	{http.StatusInternalServerError, "InternalError", problem.CategoryInternal},
	{http.StatusServiceUnavailable, "ServiceUnavailable", problem.CategoryUnavailable},
	{http.StatusGatewayTimeout, "GatewayTimeout", problem.CategoryTimeout},
}

// Schema names of the documents no message describes.
const (
	problemSchema     = "ProblemDetails"
	rateLimitedSchema = "RateLimited"
)

// failures returns the failure statuses op can answer: any request can be
// refused as invalid (400), too large (413), not JSON (415) or fail on our
// side (500, 503, 504); under /api/tenants the key (401), a scope (403)
// and the tenant or a resource (404) can refuse it; the public routes are
// rate-limited (429). A clash with concurrent work (409) or a refusal as
// it stands (422) comes from a few RPCs only (apperr.Conflict and
// Unprocessable), and each declares it in its proto (openapiv2_operation
// responses, whose descriptions replace the components'), so the
// document lists it on those operations alone.
func (op *operation) failures() []int {
	if op.fixedFailures != nil {
		return slices.Sorted(slices.Values(op.fixedFailures))
	}
	set := map[int]bool{400: true, 413: true, 415: true, 500: true, 503: true, 504: true}
	if strings.HasPrefix(op.path, TenantsPrefix) {
		set[401], set[403], set[404] = true, true, true
	} else {
		set[429] = true
	}
	for code := range op.sw.Responses {
		if n, err := strconv.Atoi(code); err == nil && n >= 400 {
			set[n] = true
		}
	}
	out := make([]int, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func (g *generator) document() (*openapi3.T, error) {
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{
			Title: g.sw.Info.Title, Version: g.sw.Info.Version, Description: unwrap(g.sw.Info.Description),
			License: &openapi3.License{Name: "Proprietary", Identifier: "LicenseRef-Almoner"},
		},
		Servers: openapi3.Servers{{URL: "/", Description: "The server that serves this document: production or sandbox, each with its own keys."}},
		Paths:   openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:   g.schemas.built,
			Responses: openapi3.ResponseBodies{},
			SecuritySchemes: openapi3.SecuritySchemes{
				SecurityScheme: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
					Type: "apiKey", In: "header", Name: "X-Api-Key",
					Description: "A tenant API key: ak_live_… (production) or ak_test_… (sandbox). Every failure of the key is the same 401.",
				}},
				CookieScheme: &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
					Type: "apiKey", In: "cookie", Name: SessionCookie,
					Description: "A staff user's session, set by POST /api/auth/sign-in (HttpOnly, SameSite=Lax). For people in a browser; programs use an API key. A state-changing request that the browser marks cross-site is 403.",
				}},
			},
		},
	}
	doc.Components.Schemas[problemSchema] = openapi3.NewSchemaRef("", problemComponent())
	doc.Components.Schemas[rateLimitedSchema] = openapi3.NewSchemaRef("", rateLimitedComponent())
	maps.Copy(doc.Components.Schemas, catalogComponents())
	if _, ok := g.schemas.names[use{msg: reportColumnName, dir: response}]; ok {
		doc.Components.Schemas[reportRunSchema] = openapi3.NewSchemaRef("", g.reportRunComponent())
	}
	tagsUsed := map[string]protoreflect.FullName{}
	for _, id := range g.order {
		op := g.ops[id]
		svc := op.b.Method.Parent().FullName()
		grp, ok := serviceGroups[svc]
		if !ok {
			return nil, fmt.Errorf("service %s has routes and no group in serviceGroups", svc)
		}
		tagsUsed[grp.name] = svc
		o, err := g.operation(op, grp)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		item := doc.Paths.Value(op.path)
		if item == nil {
			item = &openapi3.PathItem{}
			doc.Paths.Set(op.path, item)
		}
		item.SetOperation(op.b.HTTPMethod, o)
	}
	// Only the failures some operation answers.
	for _, e := range errorResponses {
		if g.failuresUsed[e.status] {
			doc.Components.Responses[e.name] = &openapi3.ResponseRef{Value: errorComponent(e)}
		}
	}
	for _, name := range groupOrder {
		svc, ok := tagsUsed[name]
		if !ok {
			continue
		}
		desc := g.sw.tag(svc.Name())
		if r, ok := recordingGifts[name]; ok {
			desc = r + "\n\n" + desc
		}
		if !serviceGroups[svc].public {
			desc = outsideSurface + "\n\n" + desc
		}
		doc.Tags = append(doc.Tags, &openapi3.Tag{Name: name, Description: desc})
	}
	if err := addExamples(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// operation is the document's operation of op.
func (g *generator) operation(op *operation, grp group) (*openapi3.Operation, error) {
	id := string(op.b.Method.Name())
	o := &openapi3.Operation{
		OperationID: id,
		Tags:        []string{grp.name},
		Summary:     op.sw.Summary,
		Description: unwrap(op.sw.Description),
		Parameters:  op.params,
		Responses:   openapi3.NewResponses(),
	}
	if o.Summary == "" {
		o.Summary = sentence(id)
	}
	if strings.HasPrefix(op.path, TenantsPrefix) {
		// Either a key or a staff session.
		o.Security = &openapi3.SecurityRequirements{{SecurityScheme: []string{}}, {CookieScheme: []string{}}}
	} else if strings.HasPrefix(op.path, AuthPrefix) && !publicAuth[id] || strings.HasPrefix(op.path, AdminPrefix) {
		// A session; on /api/admin an operator's, with a second factor.
		o.Security = &openapi3.SecurityRequirements{{CookieScheme: []string{}}}
	} else {
		// Public: no key, explicitly (nothing is inherited either).
		o.Security = &openapi3.SecurityRequirements{}
	}
	if op.body != nil {
		o.RequestBody = &openapi3.RequestBodyRef{Value: &openapi3.RequestBody{
			Description: "JSON. Property names are matched case-insensitively; null is the same as leaving a property out.",
			Content:     openapi3.NewContentWithJSONSchemaRef(g.schemas.ref(*op.body)),
		}}
	}
	o.Responses = openapi3.NewResponses(openapi3.WithStatus(op.status, &openapi3.ResponseRef{Value: op.respond()}))
	o.Responses.Delete("default")
	for _, code := range op.failures() {
		name := ""
		for _, e := range errorResponses {
			if e.status == code {
				name = e.name
			}
		}
		if name == "" {
			return nil, fmt.Errorf("declares a %d, which the gateway never answers", code)
		}
		g.failuresUsed[code] = true
		ref := &openapi3.ResponseRef{Ref: "#/components/responses/" + name}
		if d := op.sw.Responses[strconv.Itoa(code)].Description; d != "" && !defaultDescription(d) {
			// The RPC says when it answers this: that is the description.
			ref.Description = ptr(unwrap(d))
		}
		o.Responses.Set(strconv.Itoa(code), ref)
	}
	if op.finish != nil {
		op.finish(o)
	}
	return o, nil
}

// defaultDescription reports the descriptions openapi.proto gives every
// operation, which the components replace.
func defaultDescription(d string) bool {
	for _, prefix := range []string{"Validation failed.", "Missing, unknown, revoked", "A permission or feature is missing", "A resource in the path does not exist", "Unexpected failure"} {
		if strings.HasPrefix(d, prefix) {
			return true
		}
	}
	return false
}

// sentence makes an operation id a summary: CreateOrderRefund, "Create
// order refund".
func sentence(id string) string {
	var b strings.Builder
	for i, r := range id {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// errorComponent is the response of one failure status.
func errorComponent(e errorResponse) *openapi3.Response {
	if e.status == http.StatusTooManyRequests {
		desc := "A rate-limit policy refused the request. The body is the flat {\"message\": …}, Content-Type application/json, not a problem document; there is no Retry-After."
		return &openapi3.Response{Description: &desc, Content: openapi3.NewContentWithJSONSchemaRef(
			openapi3.NewSchemaRef("#/components/schemas/"+rateLimitedSchema, nil))}
	}
	desc := http.StatusText(e.status) + "."
	for _, c := range problem.Categories {
		if c.Name == e.category {
			desc = c.Explanation
		}
	}
	r := &openapi3.Response{Description: &desc, Content: openapi3.Content{
		problem.ContentType: &openapi3.MediaType{Schema: openapi3.NewSchemaRef("#/components/schemas/"+problemSchema, nil)},
	}}
	header := func(d string) *openapi3.HeaderRef {
		return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
			Description: d, Required: true, Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}}),
		}}}
	}
	switch e.status {
	case http.StatusUnauthorized:
		r.Headers = openapi3.Headers{"WWW-Authenticate": header(`ApiKey header="X-Api-Key"`)}
	case http.StatusServiceUnavailable:
		r.Headers = openapi3.Headers{"Retry-After": header("Seconds to wait before retrying: 1.")}
	}
	return r
}

// problemComponent is pkg/problem's Document as encoding/json writes it:
// a property per field, required unless omitempty.
func problemComponent() *openapi3.Schema {
	s := &openapi3.Schema{
		Type:                 &openapi3.Types{openapi3.TypeObject},
		Description:          "An RFC 7807 problem document (Content-Type application/problem+json). `errors` maps PascalCase property paths (Items[0].Quantity; \"\" for a rule about the whole request) to English messages; a typed code such as Order.BatchClosed starts a message. The 401 carries no instance and no traceId, so that every authentication failure is the same.",
		Properties:           openapi3.Schemas{},
		AdditionalProperties: openapi3.AdditionalProperties{Has: ptr(false)},
	}
	descriptions := map[string]string{
		"type":     "A URI naming the error category, {errors_base_url}/<category>: a page that explains it.",
		"title":    "A one-sentence summary; on a 403 it names the missing permission (Missing required permission: <scope>).",
		"status":   "The HTTP status, the same as the response's.",
		"instance": "The path of the failing request.",
		"errors":   "Present on validation failures (400) and on refusals with a typed code (409, 422): property path to messages.",
		"traceId":  "Identifies the request in our logs; quote it to support.",
	}
	t := reflect.TypeFor[problem.Document]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			// Extensions: written as members of their own
			// (problemExtensions), not under a name.
			continue
		}
		var p *openapi3.Schema
		switch f.Type.Kind() {
		case reflect.String:
			p = &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}}
		case reflect.Int:
			p = &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeInteger}, Format: "int32"}
		case reflect.Map:
			p = &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeObject}, AdditionalProperties: openapi3.AdditionalProperties{
				Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray},
					Items: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}})}),
			}}
		default:
			panic(fmt.Sprintf("openapigen: problem.Document.%s has a kind the generator does not know", f.Name))
		}
		p.Description = descriptions[name]
		s.Properties[name] = openapi3.NewSchemaRef("", p)
		if !strings.Contains(opts, "omitempty") {
			s.Required = append(s.Required, name)
		}
	}
	for name, p := range problemExtensions {
		s.Properties[name] = openapi3.NewSchemaRef("", p)
	}
	return s
}

// problemExtensions are the extension members (RFC 7807 §3.2) a problem
// document may carry beside the standard ones (apperr.Error.With), each
// on the failures its description names. The schema stays closed: a new
// member is listed here.
var problemExtensions = map[string]*openapi3.Schema{
	"mergedInto": {Type: &openapi3.Types{openapi3.TypeInteger}, Format: "int64",
		Description: "On the 404 of a contact merged into another: the surviving contact's id."},
}

// rateLimitedComponent is the 429 body, problem.WriteRateLimited's.
func rateLimitedComponent() *openapi3.Schema {
	return &openapi3.Schema{
		Type:        &openapi3.Types{openapi3.TypeObject},
		Description: "The 429 body.",
		Properties: openapi3.Schemas{"message": openapi3.NewSchemaRef("", &openapi3.Schema{
			Type: &openapi3.Types{openapi3.TypeString}, Enum: []any{problem.RateLimitedMessage},
		})},
		Required:             []string{"message"},
		AdditionalProperties: openapi3.AdditionalProperties{Has: ptr(false)},
	}
}
