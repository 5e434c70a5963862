package openapigen

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/almoner/almoner/pkg/events"
	"github.com/almoner/almoner/pkg/reporttypes"
	"github.com/almoner/almoner/pkg/scopes"
)

// direction says which way a message travels: responses are written by
// the wire codec (pkg/wirejson) with every property present, requests are
// read by it with every property optional.
type direction int

const (
	response direction = iota
	request
)

// use is one schema the document holds: a message in a direction,
// without the fields its route's path sets.
type use struct {
	msg protoreflect.FullName
	dir direction
	// omit lists the fields (proto names, comma-joined) the path sets.
	omit string
}

// Well-known messages the wire codec writes as JSON values of their own.
const (
	decimalName   protoreflect.FullName = "almoner.type.v1.Decimal"
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
	structName    protoreflect.FullName = "google.protobuf.Struct"
	valueName     protoreflect.FullName = "google.protobuf.Value"
	listValueName protoreflect.FullName = "google.protobuf.ListValue"
	emptyName     protoreflect.FullName = "google.protobuf.Empty"
)

// DecimalFormat is the format of every amount: a JSON number written with
// its exact digits and no exponent (docs/openapi.md).
const DecimalFormat = "decimal"

// schemas builds the components of the document: one per use, named as an
// integrator would write them.
type schemas struct {
	sw    *swagger
	descs map[protoreflect.FullName]protoreflect.MessageDescriptor
	uses  map[use]bool
	names map[use]string
	built openapi3.Schemas
	// resources are, per message read in a request, the resources whose
	// properties a create or replace may carry back in it (see
	// httpmap.ResourceOf): one schema lists them all, read-only.
	resources map[protoreflect.FullName]map[protoreflect.FullName]bool
	// bodyDefs hold the words of bodies of "*" with path fields, which
	// openapiv2 wrote as definitions of their own.
	bodyDefs map[use]swaggerSchema
	// words are the words of messages openapiv2 wrote no definition of
	// (those only a streamed route reaches: streamedOps).
	words map[protoreflect.FullName]swaggerSchema
}

func newSchemas(sw *swagger) *schemas {
	return &schemas{sw: sw, descs: map[protoreflect.FullName]protoreflect.MessageDescriptor{}, uses: map[use]bool{}, built: openapi3.Schemas{}, bodyDefs: map[use]swaggerSchema{},
		words: map[protoreflect.FullName]swaggerSchema{}, resources: map[protoreflect.FullName]map[protoreflect.FullName]bool{}}
}

func wellKnown(name protoreflect.FullName) bool {
	switch name {
	case decimalName, timestampName, structName, valueName, listValueName:
		return true
	}
	return false
}

// collect records u and every message it reaches, so names can be given
// knowing every message that wants one; resource is what a request body
// may carry back at md's level, or "".
func (s *schemas) collect(md protoreflect.MessageDescriptor, u use, resource protoreflect.FullName) {
	if wellKnown(md.FullName()) {
		return
	}
	if resource != "" && u.dir == request {
		if s.resources[md.FullName()] == nil {
			s.resources[md.FullName()] = map[protoreflect.FullName]bool{}
		}
		if s.resources[md.FullName()][resource] {
			return
		}
		s.resources[md.FullName()][resource] = true
	} else if s.uses[u] {
		return
	}
	s.uses[u] = true
	s.descs[md.FullName()] = md
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if u.omit != "" && omitted(u.omit, fd) {
			continue
		}
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if sub := fd.Message(); sub != nil {
			s.collect(sub, use{msg: sub.FullName(), dir: u.dir}, s.resourceOf(resource, fd))
		}
	}
}

func omitted(omit string, fd protoreflect.FieldDescriptor) bool {
	for _, n := range strings.Split(omit, ",") {
		if n == string(fd.Name()) {
			return true
		}
	}
	return false
}

// resourceOf is wirejson's rule: the message the resource returns under
// the property of fd, if any.
func (s *schemas) resourceOf(resource protoreflect.FullName, fd protoreflect.FieldDescriptor) protoreflect.FullName {
	res := s.descs[resource]
	if res == nil {
		return ""
	}
	rf := res.Fields().ByJSONName(fd.JSONName())
	if rf == nil {
		return ""
	}
	if rf.IsMap() {
		rf = rf.MapValue()
	}
	if rf.Message() == nil {
		return ""
	}
	s.descs[rf.Message().FullName()] = rf.Message()
	return rf.Message().FullName()
}

// assignNames names every collected use: the message's name (ApiKey,
// CreateApiKeyRequest); a message that is read as well as written is
// <Name>Input when read; messages of one name in two packages are
// prefixed with their package (ContactsAddress, OrdersAddress).
func (s *schemas) assignNames() error {
	byBase := map[string]map[protoreflect.FullName]bool{}
	written := map[protoreflect.FullName]bool{}
	for u := range s.uses {
		if u.dir == response {
			written[u.msg] = true
		}
	}
	base := func(u use) string {
		n := localName(s.descs[u.msg])
		if u.dir == request && written[u.msg] {
			n += "Input"
		}
		return n
	}
	for u := range s.uses {
		b := base(u)
		if byBase[b] == nil {
			byBase[b] = map[protoreflect.FullName]bool{}
		}
		byBase[b][u.msg] = true
	}
	s.names = map[use]string{}
	taken := map[string]use{}
	for _, u := range s.sortedUses() {
		n := base(u)
		if len(byBase[n]) > 1 {
			n = packageWord(s.descs[u.msg]) + n
		}
		if prev, ok := taken[n]; ok {
			return fmt.Errorf("two schemas would be named %s: %s (%v) and %s (%v)", n, prev.msg, prev, u.msg, u)
		}
		taken[n] = u
		s.names[u] = n
	}
	return nil
}

func (s *schemas) sortedUses() []use {
	out := make([]use, 0, len(s.uses))
	for u := range s.uses {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// localName is a message's name with its parents' (Order.Line: OrderLine).
func localName(md protoreflect.MessageDescriptor) string {
	name := ""
	for d := protoreflect.Descriptor(md); d != nil; d = d.Parent() {
		if _, ok := d.(protoreflect.FileDescriptor); ok {
			break
		}
		name = string(d.Name()) + name
	}
	return name
}

// packageWord is the distinguishing word of a message's package, in the
// singular: Contact for almoner.contacts.v1 (ContactAddress).
func packageWord(md protoreflect.MessageDescriptor) string {
	parts := strings.Split(string(md.ParentFile().Package()), ".")
	w := parts[0]
	if len(parts) >= 2 {
		w = parts[len(parts)-2]
	}
	return strings.ToUpper(w[:1]) + strings.TrimSuffix(w[1:], "s")
}

// build makes the component of every use.
func (s *schemas) build() {
	for _, u := range s.sortedUses() {
		s.built[s.names[u]] = openapi3.NewSchemaRef("", s.message(s.descs[u.msg], u))
	}
}

// ref returns a reference to the component of u.
func (s *schemas) ref(u use) *openapi3.SchemaRef {
	name, ok := s.names[u]
	if !ok {
		panic(fmt.Sprintf("openapigen: no schema for %v", u))
	}
	return openapi3.NewSchemaRef("#/components/schemas/"+name, nil)
}

// message is the object a message is on the wire. Every schema is closed:
// the codec writes no other property, and the gateway refuses any other.
func (s *schemas) message(md protoreflect.MessageDescriptor, u use) *openapi3.Schema {
	def, ok := s.sw.definition(md)
	if !ok {
		def = s.words[md.FullName()]
	}
	if d, ok := s.bodyDefs[u]; ok {
		def = d
	}
	sch := &openapi3.Schema{
		Type:                 &openapi3.Types{openapi3.TypeObject},
		Description:          text(def.Title, def.Description),
		Properties:           openapi3.Schemas{},
		AdditionalProperties: openapi3.AdditionalProperties{Has: ptr(false)},
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if u.omit != "" && omitted(u.omit, fd) {
			continue
		}
		prop := s.field(fd, u.dir)
		if p, ok := def.Properties[fd.JSONName()]; ok {
			describe(prop, text(p.Title, p.Description))
			// openapiv2 writes a repeated field's enum on its items.
			if len(p.Enum) > 0 {
				setEnum(prop, p.Enum)
			} else if p.Items != nil && len(p.Items.Enum) > 0 {
				setEnum(prop, p.Items.Enum)
			}
		}
		if c, ok := catalogEnums[fd.FullName()]; ok {
			useCatalog(prop, c)
		}
		// The codec writes every field but the unchosen members of a
		// oneof; a request must send what the proto marks REQUIRED (the
		// service answers 400 without it), and what it marks OUTPUT_ONLY
		// the server sets: a request may carry it back, and it is ignored.
		inOneof := fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()
		switch {
		case u.dir == response && !inOneof:
			sch.Required = append(sch.Required, fd.JSONName())
		case u.dir == request && !inOneof && (hasBehavior(fd, annotations.FieldBehavior_REQUIRED) ||
			slices.Contains(def.Required, fd.JSONName())):
			sch.Required = append(sch.Required, fd.JSONName())
		case u.dir == request && hasBehavior(fd, annotations.FieldBehavior_OUTPUT_ONLY):
			prop = readOnly(prop)
		}
		sch.Properties[fd.JSONName()] = prop
	}
	if u.dir == request {
		for _, res := range sortedNames(s.resources[md.FullName()]) {
			s.requestExtras(sch, md, s.descs[res])
		}
	}
	return sch
}

// requestExtras adds the properties a create or replace body may carry
// back from what a GET returned: accepted, never read.
func (s *schemas) requestExtras(sch *openapi3.Schema, md, res protoreflect.MessageDescriptor) {
	rf := res.Fields()
	for i := range rf.Len() {
		fd := rf.Get(i)
		if md.Fields().ByJSONName(fd.JSONName()) != nil || sch.Properties[fd.JSONName()] != nil {
			continue
		}
		desc := fmt.Sprintf("Returned by the API in %s; a request may send it back, and it is ignored.", localName(res))
		sch.Properties[fd.JSONName()] = s.extra(fd, desc)
	}
}

// extra is the schema of a property a request may carry back from its
// resource: what the API wrote there (its type as a response, null
// included where the codec writes null, as a client sends back a GET's
// `"disabledReason": null`), read-only. A message of no response
// component (none so far) is any value.
func (s *schemas) extra(fd protoreflect.FieldDescriptor, desc string) *openapi3.SchemaRef {
	md := fd.Message()
	if fd.IsMap() {
		md = fd.MapValue().Message()
	}
	if md != nil && !wellKnown(md.FullName()) {
		if _, ok := s.names[use{msg: md.FullName(), dir: response}]; !ok {
			return openapi3.NewSchemaRef("", &openapi3.Schema{ReadOnly: true, Description: desc})
		}
	}
	p := s.field(fd, response)
	if p.Ref != "" {
		p = openapi3.NewSchemaRef("", &openapi3.Schema{AllOf: openapi3.SchemaRefs{p}})
	}
	p.Value.ReadOnly, p.Value.Description = true, desc
	return p
}

// hasBehavior reports whether fd carries the (google.api.field_behavior)
// b: REQUIRED makes a request property required, OUTPUT_ONLY read-only
// (docs/openapi.md, "Rules every operation follows").
func hasBehavior(fd protoreflect.FieldDescriptor, b annotations.FieldBehavior) bool {
	opts := fd.Options()
	if opts == nil || !proto.HasExtension(opts, annotations.E_FieldBehavior) {
		return false
	}
	behaviors, _ := proto.GetExtension(opts, annotations.E_FieldBehavior).([]annotations.FieldBehavior)
	return slices.Contains(behaviors, b)
}

// readOnly marks a property read-only, wrapping a bare reference (whose
// siblings a 3.0 reader would ignore) in an allOf.
func readOnly(p *openapi3.SchemaRef) *openapi3.SchemaRef {
	if p.Ref != "" {
		p = openapi3.NewSchemaRef("", &openapi3.Schema{AllOf: openapi3.SchemaRefs{p}})
	}
	p.Value.ReadOnly = true
	return p
}

// describe sets the description of a property (on the wrapper of a
// nullable reference). A bare reference never is a property: every
// message field is nullable.
func describe(p *openapi3.SchemaRef, d string) {
	if d != "" && p.Value != nil {
		p.Value.Description = d
	}
}

// A catalog is a closed set whose values a Go catalog holds rather than
// the proto: the scopes of a key are pkg/scopes.Catalog, which the auth
// service checks against; the event types of a webhook, a delivery filter
// and the event feed are pkg/events.Catalog, which the webhooks service
// checks against; and a report's typeKey is pkg/reporttypes, which the
// reports catalog is held to. They grow with the API, so the document lists
// them as they are when generated instead of a copy in the protos, each
// once as a named component: a client has one ScopeName type, not one per
// property (and no two properties' generated names can collide, as
// Report.typeKey and ReportType.key did).
type catalog struct {
	// Component is the schema's name under components.
	Component string
	// Description says what the set is.
	Description string
	// Values lists the set, in the catalog's order; nil for a set the
	// service checks by shape, which Pattern then describes.
	Values func() []string
	// Pattern is the shape every value has, when the set is open.
	Pattern string
}

var (
	scopeCatalog      = catalog{"ScopeName", "A permission scope an API key can carry (docs/scopes.md).", scopeNames, ""}
	eventTypeCatalog  = catalog{"EventTypeName", "A subscribable event type, as GET /webhooks/event-types lists them.", eventTypeNames, ""}
	reportTypeCatalog = catalog{"ReportTypeKey", "A built-in report type, as GET /reports/types lists them.", reporttypes.Keys, ""}
	// The feed holds every audit event of the tenant, those outside the
	// subscribable catalog too (report.updated, api_key.created), and its
	// filter takes any name of the audit shape (services/webhooks
	// eventNameShape): an enum of EventTypeName would refuse in a
	// generated client what the API accepts.
	feedEventCatalog = catalog{"FeedEventType", "An event type of the feed: any audit event, subscribable or not (<entity>.created, .updated or .deleted).", nil, `^[a-z_]+\.(created|updated|deleted)$`}
)

// catalogEnums are the fields whose values a catalog lists.
var catalogEnums = map[protoreflect.FullName]catalog{
	"almoner.auth.v1.ApiKey.scopes":                                scopeCatalog,
	"almoner.auth.v1.CreatedApiKey.scopes":                         scopeCatalog,
	"almoner.auth.v1.CreateApiKeyRequest.scopes":                   scopeCatalog,
	"almoner.webhooks.v1.Webhook.event_types":                      eventTypeCatalog,
	"almoner.webhooks.v1.CreatedWebhook.event_types":               eventTypeCatalog,
	"almoner.webhooks.v1.CreateWebhookRequest.event_types":         eventTypeCatalog,
	"almoner.webhooks.v1.UpdateWebhookRequest.event_types":         eventTypeCatalog,
	"almoner.webhooks.v1.ReplayWebhookEventsRequest.event_types":   eventTypeCatalog,
	"almoner.webhooks.v1.ListWebhookDeliveriesRequest.event_types": eventTypeCatalog,
	"almoner.webhooks.v1.ListEventsRequest.types":                  feedEventCatalog,
	"almoner.reports.v1.ReportType.key":                            reportTypeCatalog,
	"almoner.reports.v1.RunReportTypeRequest.type_key":             reportTypeCatalog,
	"almoner.reports.v1.ReportSummary.data_source_key":             reportTypeCatalog,
	"almoner.reports.v1.Report.type_key":                           reportTypeCatalog,
	"almoner.reports.v1.Report.data_source_key":                    reportTypeCatalog,
	"almoner.reports.v1.CreateReportRequest.type_key":              reportTypeCatalog,
	"almoner.reports.v1.CreateReportRequest.data_source_key":       reportTypeCatalog,
	"almoner.reports.v1.UpdateReportRequest.type_key":              reportTypeCatalog,
	"almoner.reports.v1.UpdateReportRequest.data_source_key":       reportTypeCatalog,
}

// components are the schemas of every catalog.
func catalogComponents() openapi3.Schemas {
	out := openapi3.Schemas{}
	for _, c := range catalogEnums {
		sch := openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}, Description: c.Description, Pattern: c.Pattern})
		if c.Values != nil {
			setEnum(sch, c.Values())
		}
		out[c.Component] = sch
	}
	return out
}

// useCatalog makes p (or its items) a reference to c's component, keeping
// null where the codec may write it.
func useCatalog(p *openapi3.SchemaRef, c catalog) {
	ref := openapi3.NewSchemaRef("#/components/schemas/"+c.Component, nil)
	target := p
	if p.Value != nil && p.Value.Items != nil {
		target = p.Value.Items
	}
	if target.Value != nil && target.Value.Type != nil && target.Value.Type.Includes(openapi3.TypeNull) {
		*target = *openapi3.NewSchemaRef("", &openapi3.Schema{OneOf: openapi3.SchemaRefs{ref, openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}})}})
		return
	}
	*target = *ref
}

func eventTypeNames() []string {
	var names []string
	for _, t := range events.Catalog() {
		names = append(names, t.Name)
	}
	return names
}

func scopeNames() []string {
	names := make([]string, 0, len(scopes.Catalog))
	for _, s := range scopes.Catalog {
		names = append(names, s.Name)
	}
	return names
}

// setEnum lists the values of a string property (of a list's items). A
// nullable property lists null too: an enum refuses what it does not list,
// and the codec writes null for an unset optional string.
func setEnum(p *openapi3.SchemaRef, values []string) {
	target := p.Value
	if target != nil && target.Items != nil && target.Items.Value != nil {
		target = target.Items.Value
	}
	if target == nil {
		return
	}
	for _, v := range values {
		target.Enum = append(target.Enum, v)
	}
	if target.Type != nil && target.Type.Includes(openapi3.TypeNull) {
		target.Enum = append(target.Enum, nil)
	}
}

func ptr[T any](v T) *T { return &v }

// field is one property: a list is an array (never null: an empty list is
// []), a map an object, a message field or an optional scalar may be null
// (the codec writes null when it is unset; a request may send null for
// "not given").
func (s *schemas) field(fd protoreflect.FieldDescriptor, dir direction) *openapi3.SchemaRef {
	switch {
	case fd.IsList():
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray}, Items: s.singular(fd, dir)})
	case fd.IsMap():
		return openapi3.NewSchemaRef("", &openapi3.Schema{
			Type:                 &openapi3.Types{openapi3.TypeObject},
			AdditionalProperties: openapi3.AdditionalProperties{Schema: s.singular(fd.MapValue(), dir)},
		})
	}
	sch := s.singular(fd, dir)
	if fd.HasPresence() {
		return nullable(sch)
	}
	return sch
}

// nullable lets a schema be null too.
func nullable(sch *openapi3.SchemaRef) *openapi3.SchemaRef {
	if sch.Ref != "" {
		return openapi3.NewSchemaRef("", &openapi3.Schema{OneOf: openapi3.SchemaRefs{sch, openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}})}})
	}
	v := sch.Value
	if v.Type == nil {
		// Any JSON value (google.protobuf.Value) includes null already.
		return sch
	}
	if !v.Type.Includes(openapi3.TypeNull) {
		*v.Type = append(*v.Type, openapi3.TypeNull)
	}
	return sch
}

// singular is the schema of one value of fd, as pkg/wirejson writes it.
func (s *schemas) singular(fd protoreflect.FieldDescriptor, dir direction) *openapi3.SchemaRef {
	v := &openapi3.Schema{}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		v.Type = &openapi3.Types{openapi3.TypeBoolean}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		v.Type, v.Format = &openapi3.Types{openapi3.TypeInteger}, "int32"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		// A JSON number, not protojson's string (docs/openapi.md).
		v.Type, v.Format = &openapi3.Types{openapi3.TypeInteger}, "int64"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		v.Type, v.Min, v.Max = &openapi3.Types{openapi3.TypeInteger}, ptr(0.0), ptr(4294967295.0)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		v.Type, v.Min = &openapi3.Types{openapi3.TypeInteger}, ptr(0.0)
	case protoreflect.FloatKind:
		v.Type, v.Format = &openapi3.Types{openapi3.TypeNumber}, "float"
	case protoreflect.DoubleKind:
		v.Type, v.Format = &openapi3.Types{openapi3.TypeNumber}, "double"
	case protoreflect.StringKind:
		v.Type = &openapi3.Types{openapi3.TypeString}
	case protoreflect.BytesKind:
		v.Type = &openapi3.Types{openapi3.TypeString}
		v.ContentEncoding = "base64"
	case protoreflect.EnumKind:
		v.Type = &openapi3.Types{openapi3.TypeString}
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			v.Enum = append(v.Enum, string(vals.Get(i).Name()))
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return s.messageRef(fd.Message(), dir)
	}
	return openapi3.NewSchemaRef("", v)
}

// messageRef is a message field's schema: the well-known types inline, as
// the codec writes them, others a reference to their component.
func (s *schemas) messageRef(md protoreflect.MessageDescriptor, dir direction) *openapi3.SchemaRef {
	switch md.FullName() {
	case decimalName:
		return openapi3.NewSchemaRef("", &openapi3.Schema{
			Type: &openapi3.Types{openapi3.TypeNumber}, Format: DecimalFormat,
		})
	case timestampName:
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}, Format: "date-time"})
	case structName:
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeObject}})
	case listValueName:
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray}})
	case valueName:
		return openapi3.NewSchemaRef("", &openapi3.Schema{})
	}
	return s.ref(use{msg: md.FullName(), dir: dir})
}

func sortedNames(m map[protoreflect.FullName]bool) []protoreflect.FullName {
	out := make([]protoreflect.FullName, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
