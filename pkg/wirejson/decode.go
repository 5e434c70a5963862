package wirejson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/almoner/almoner/pkg/apperr"
)

// RootPath is the error key for a body that is not JSON or not an object.
const RootPath = "$"

// Unmarshal decodes a JSON request body into m with the zero Options: every
// property must be a field of m. Every problem is reported as a
// *DecodeError whose violations are keyed by the PascalCase property path
// (`Items[0].Quantity`), so the gateway can answer 400 with the same
// `errors` map a service's own validation would produce.
//
// Property names match case-insensitively (both `idempotencyKey` and
// `IdempotencyKey` reach the same field) and null leaves a field unset.
func Unmarshal(data []byte, m proto.Message) error { return Options{}.Unmarshal(data, m) }

// Options say what a request body may carry besides the fields of the
// message it is decoded into. A property that is neither a field nor
// allowed here is refused (`'Quantty' is not a property of this
// request.`): ignoring it would let a misspelt `ammount` read as omitted,
// and an omitted amount refunds everything.
type Options struct {
	// Resource is the message a create or a replace returns (Contact for
	// CreateContact and UpdateContact). A property the request does not
	// define but Resource does, at the same path (`createdAt`,
	// `items[0].lineTotal`), is accepted and ignored, so that what a GET
	// returned can be sent back.
	Resource protoreflect.MessageDescriptor
	// Bound reports the top-level fields (by proto name) the request takes
	// from elsewhere, its path: the body may not set them, since the path's
	// value would silently win.
	Bound func(protoName string) bool
}

// Unmarshal decodes a JSON request body into m under o.
func (o Options) Unmarshal(data []byte, m proto.Message) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return io.EOF
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return &DecodeError{Violations: []apperr.Violation{{Field: RootPath, Message: syntaxMessage(err)}}}
	}
	if dec.More() {
		return &DecodeError{Violations: []apperr.Violation{{Field: RootPath, Message: "The request body must hold a single JSON value."}}}
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return &DecodeError{Violations: []apperr.Violation{{Field: RootPath, Message: "The request body must be a JSON object."}}}
	}
	d := &decoder{bound: o.Bound}
	d.object(obj, m.ProtoReflect(), "", o.Resource)
	if len(d.violations) > 0 {
		return &DecodeError{Violations: d.violations}
	}
	return nil
}

// decodeErrorPrefix starts the text of every DecodeError. grpc-gateway's
// generated handlers turn a decoder error into an INVALID_ARGUMENT status
// carrying only the error's text, so the violations travel in that text and
// ParseDecodeError reads them back at the error handler.
const decodeErrorPrefix = "wirejson: invalid request: "

// DecodeError lists the property paths a request body or query string got
// wrong.
type DecodeError struct {
	Violations []apperr.Violation
}

func (e *DecodeError) Error() string {
	m := make(map[string][]string, len(e.Violations))
	for _, v := range e.Violations {
		m[v.Field] = append(m[v.Field], v.Message)
	}
	b, _ := json.Marshal(m)
	return decodeErrorPrefix + string(b)
}

// ParseDecodeError recovers the violations from a DecodeError's text, as it
// arrives in a status message.
func ParseDecodeError(msg string) (map[string][]string, bool) {
	rest, ok := strings.CutPrefix(msg, decodeErrorPrefix)
	if !ok {
		return nil, false
	}
	var m map[string][]string
	if err := json.Unmarshal([]byte(rest), &m); err != nil || len(m) == 0 {
		return nil, false
	}
	return m, true
}

func syntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("The request body is not valid JSON (at byte %d).", se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "The request body is not valid JSON (it ends too early)."
	}
	return "The request body is not valid JSON."
}

type decoder struct {
	violations []apperr.Violation
	// bound is Options.Bound, for the top-level object only.
	bound func(protoName string) bool
}

func (d *decoder) fail(path, format string, args ...any) {
	// Cap the list: a hostile body with a million bad elements should not
	// produce a million-line answer.
	if len(d.violations) < 50 {
		d.violations = append(d.violations, apperr.Violation{Field: path, Message: fmt.Sprintf(format, args...)})
	}
}

// PascalPath returns the PascalCase form of a lowerCamel JSON name.
func PascalPath(prefix, jsonName string) string {
	name := jsonName
	if name != "" {
		// By rune: a name the client made up may start with any letter.
		r, size := utf8.DecodeRuneInString(name)
		name = string(unicode.ToUpper(r)) + name[size:]
	}
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// maxNameInError bounds a client's property or parameter name as it is
// repeated in an error: a made-up name may be as long as the body.
const maxNameInError = 64

// shownName returns a name the client sent, cut to maxNameInError bytes
// (at a rune boundary, marked with an ellipsis).
func shownName(name string) string {
	if len(name) <= maxNameInError {
		return name
	}
	cut := maxNameInError
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

func fieldByJSONName(fields protoreflect.FieldDescriptors, key string) protoreflect.FieldDescriptor {
	if fd := fields.ByJSONName(key); fd != nil {
		return fd
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if strings.EqualFold(fd.JSONName(), key) || strings.EqualFold(string(fd.Name()), key) {
			return fd
		}
	}
	return nil
}

// object fills m from obj. resource is the part of Options.Resource at
// the same path, or nil: its properties are accepted and ignored where m
// has no field of that name.
func (d *decoder) object(obj map[string]any, m protoreflect.Message, prefix string, resource protoreflect.MessageDescriptor) {
	fields := m.Descriptor().Fields()
	// Names match case-insensitively, so two keys can name one field; which
	// one would win depends on the map's order, so neither does.
	seen := map[protoreflect.FieldNumber]string{}
	for key, raw := range obj {
		fd := d.property(fields, key, prefix, resource, seen)
		if fd == nil {
			continue
		}
		sub := resourceOf(resource, fd)
		path := PascalPath(prefix, fd.JSONName())
		// null leaves a field unset, except a singular JSON value
		// (google.protobuf.Value): there null is what was sent, so that a
		// PATCH body can tell "clear it" (null) from "leave it" (absent).
		if raw == nil && (fd.IsList() || fd.IsMap() || fd.Message() == nil || fd.Message().FullName() != valueName) {
			m.Clear(fd)
			continue
		}
		switch {
		case fd.IsList():
			d.list(m, fd, raw, path, sub)
		case fd.IsMap():
			d.mapField(m, fd, raw, path, sub)
		default:
			newMsg := func() protoreflect.Value { return m.NewField(fd) }
			if v, ok := d.value(fd, raw, path, newMsg, sub); ok {
				m.Set(fd, v)
			}
		}
	}
}

// property returns the field a body's key names, or nil when the key is
// to be skipped: a property of the resource that the request does not
// take (accepted and ignored), or a failure it records (the field named
// twice, set by the path, or no property of the request).
func (d *decoder) property(fields protoreflect.FieldDescriptors, key, prefix string, resource protoreflect.MessageDescriptor,
	seen map[protoreflect.FieldNumber]string) protoreflect.FieldDescriptor {
	fd := fieldByJSONName(fields, key)
	if fd != nil {
		if other, dup := seen[fd.Number()]; dup {
			path := PascalPath(prefix, fd.JSONName())
			d.fail(path, "'%s' is given twice ('%s' and '%s'); property names match case-insensitively.",
				lastSegment(path), shownName(min(other, key)), shownName(max(other, key)))
			return nil
		}
		seen[fd.Number()] = key
	}
	bound := fd != nil && prefix == "" && d.bound != nil && d.bound(string(fd.Name()))
	if fd != nil && !bound {
		return fd
	}
	switch {
	case resource != nil && fieldByJSONName(resource.Fields(), key) != nil:
		// The resource returns it: read-only, or written elsewhere.
	case bound:
		path := PascalPath(prefix, fd.JSONName())
		d.fail(path, "'%s' is set by the request's path, not its body.", lastSegment(path))
	default:
		d.fail(PascalPath(prefix, shownName(key)), "'%s' is not a property of this request.", PascalPath("", shownName(key)))
	}
	return nil
}

// list appends the elements of raw, which must be an array, to m's list
// field fd.
func (d *decoder) list(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, path string, sub protoreflect.MessageDescriptor) {
	arr, ok := raw.([]any)
	if !ok {
		d.fail(path, "'%s' must be an array.", lastSegment(path))
		return
	}
	list := m.Mutable(fd).List()
	for i, el := range arr {
		elPath := fmt.Sprintf("%s[%d]", path, i)
		if v, ok := d.value(fd, el, elPath, list.NewElement, sub); ok {
			list.Append(v)
		}
	}
}

// mapField sets the entries of raw, which must be an object, in m's map
// field fd.
func (d *decoder) mapField(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, path string, sub protoreflect.MessageDescriptor) {
	mo, ok := raw.(map[string]any)
	if !ok {
		d.fail(path, "'%s' must be an object.", lastSegment(path))
		return
	}
	mp := m.Mutable(fd).Map()
	for k, el := range mo {
		// A bad key is reported under the map's own path: the key itself
		// would make an unreadable one.
		if !d.text(path, k) {
			continue
		}
		mk, ok := d.mapKey(fd.MapKey(), k, path+"."+k)
		if !ok {
			continue
		}
		if v, ok := d.value(fd.MapValue(), el, path+"."+k, mp.NewValue, sub); ok {
			mp.Set(mk, v)
		}
	}
}

// resourceOf returns the message of resource's field named like fd (the
// element's for a list, the value's for a map), or nil when resource has
// none: what the resource returns under fd's property.
func resourceOf(resource protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if resource == nil {
		return nil
	}
	rf := fieldByJSONName(resource.Fields(), fd.JSONName())
	if rf == nil {
		return nil
	}
	if rf.IsMap() {
		rf = rf.MapValue()
	}
	return rf.Message()
}

// text reports whether s may be stored as text, and otherwise records why
// under path. PostgreSQL text cannot hold the NUL character (the insert
// fails, which a service would answer with a 500), and a protobuf string
// must be valid UTF-8 (a query string can carry any bytes; JSON bodies
// arrive with invalid bytes already replaced). Checking here, where every
// request body and query string is decoded, answers 400 for every field of
// every endpoint, so no service has to remember to.
func (d *decoder) text(path, s string) bool {
	if strings.IndexByte(s, 0) >= 0 {
		d.fail(path, "'%s' must not contain the NUL character (\\u0000).", lastSegment(path))
		return false
	}
	if !utf8.ValidString(s) {
		d.fail(path, "'%s' must be valid UTF-8 text.", lastSegment(path))
		return false
	}
	return true
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func (d *decoder) mapKey(fd protoreflect.FieldDescriptor, k, path string) (protoreflect.MapKey, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(k).MapKey(), true
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(k)
		if err != nil {
			d.fail(path, "'%s' is not a valid key.", k)
			return protoreflect.MapKey{}, false
		}
		return protoreflect.ValueOfBool(b).MapKey(), true
	default:
		// A key that is no integer fails (integer says why); the invalid
		// value must not become a key: MapKey panics on it.
		v, ok := d.integer(fd, json.Number(k), path)
		if !ok {
			return protoreflect.MapKey{}, false
		}
		return v.MapKey(), true
	}
}

// value converts one JSON value for a singular field or a list/map element;
// resource is what the resource returns there (see object).
func (d *decoder) value(fd protoreflect.FieldDescriptor, raw any, path string, newMsg func() protoreflect.Value, resource protoreflect.MessageDescriptor) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return d.boolValue(raw, path)
	case protoreflect.StringKind:
		return d.stringValue(raw, path)
	case protoreflect.BytesKind:
		return d.bytesValue(raw, path)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return d.floatValue(fd, raw, path)
	case protoreflect.EnumKind:
		return d.enumValue(fd, raw, path)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return d.message(fd.Message(), raw, path, newMsg, resource)
	default:
		return d.integer(fd, raw, path)
	}
}

// boolValue converts raw, which must be true or false.
func (d *decoder) boolValue(raw any, path string) (protoreflect.Value, bool) {
	b, ok := raw.(bool)
	if !ok {
		d.fail(path, "'%s' must be true or false.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	return protoreflect.ValueOfBool(b), true
}

// stringValue converts raw, which must be a string that text accepts.
func (d *decoder) stringValue(raw any, path string) (protoreflect.Value, bool) {
	s, ok := raw.(string)
	if !ok {
		d.fail(path, "'%s' must be a string.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	if !d.text(path, s) {
		return protoreflect.Value{}, false
	}
	return protoreflect.ValueOfString(s), true
}

// bytesValue converts raw, which must be a string in standard, padded
// base64.
func (d *decoder) bytesValue(raw any, path string) (protoreflect.Value, bool) {
	s, ok := raw.(string)
	if !ok {
		d.fail(path, "'%s' must be a base64 string.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		d.fail(path, "'%s' must be a base64 string.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	return protoreflect.ValueOfBytes(b), true
}

// floatValue converts raw, which must be a finite JSON number, for a float
// or double field fd.
func (d *decoder) floatValue(fd protoreflect.FieldDescriptor, raw any, path string) (protoreflect.Value, bool) {
	n, ok := raw.(json.Number)
	if !ok {
		d.fail(path, "'%s' must be a number.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		d.fail(path, "'%s' must be a number.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	if fd.Kind() == protoreflect.FloatKind {
		return protoreflect.ValueOfFloat32(float32(f)), true
	}
	return protoreflect.ValueOfFloat64(f), true
}

// enumValue converts raw, which must be the name of one of fd's values in
// any case.
func (d *decoder) enumValue(fd protoreflect.FieldDescriptor, raw any, path string) (protoreflect.Value, bool) {
	s, ok := raw.(string)
	if !ok {
		d.fail(path, "'%s' must be a string.", lastSegment(path))
		return protoreflect.Value{}, false
	}
	for i := range fd.Enum().Values().Len() {
		ev := fd.Enum().Values().Get(i)
		if strings.EqualFold(string(ev.Name()), s) {
			return protoreflect.ValueOfEnum(ev.Number()), true
		}
	}
	d.fail(path, "The value '%s' is not valid for %s.", s, lastSegment(path))
	return protoreflect.Value{}, false
}

func (d *decoder) integer(fd protoreflect.FieldDescriptor, raw any, path string) (protoreflect.Value, bool) {
	name := lastSegment(path)
	var text string
	switch v := raw.(type) {
	case json.Number:
		text = string(v)
	case string:
		// 64-bit integers may arrive quoted from clients whose numbers are
		// doubles; accept that, as protojson does.
		if fd.Kind() == protoreflect.Int64Kind || fd.Kind() == protoreflect.Sint64Kind || fd.Kind() == protoreflect.Sfixed64Kind ||
			fd.Kind() == protoreflect.Uint64Kind || fd.Kind() == protoreflect.Fixed64Kind {
			text = v
			break
		}
		d.fail(path, "'%s' must be an integer.", name)
		return protoreflect.Value{}, false
	default:
		d.fail(path, "'%s' must be an integer.", name)
		return protoreflect.Value{}, false
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			d.fail(path, "'%s' must be an integer between %d and %d.", name, math.MinInt32, math.MaxInt32)
			return protoreflect.Value{}, false
		}
		return protoreflect.ValueOfInt32(int32(n)), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			d.fail(path, "'%s' must be an integer.", name)
			return protoreflect.Value{}, false
		}
		return protoreflect.ValueOfInt64(n), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			d.fail(path, "'%s' must be a non-negative integer.", name)
			return protoreflect.Value{}, false
		}
		return protoreflect.ValueOfUint32(uint32(n)), true
	default:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			d.fail(path, "'%s' must be a non-negative integer.", name)
			return protoreflect.Value{}, false
		}
		return protoreflect.ValueOfUint64(n), true
	}
}

func (d *decoder) message(md protoreflect.MessageDescriptor, raw any, path string, newMsg func() protoreflect.Value, resource protoreflect.MessageDescriptor) (protoreflect.Value, bool) {
	name := lastSegment(path)
	v := newMsg()
	m := v.Message()
	switch md.FullName() {
	case decimalName:
		var text string
		switch r := raw.(type) {
		case json.Number:
			text = string(r)
		case string:
			text = strings.TrimSpace(r)
		}
		if !IsDecimalLiteral(text) || len(text) > 40 {
			d.fail(path, "'%s' must be a decimal number such as 100.00.", name)
			return protoreflect.Value{}, false
		}
		m.Set(md.Fields().ByName("value"), protoreflect.ValueOfString(text))
		return v, true
	case timestampName:
		s, ok := raw.(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if !ok || err != nil {
			d.fail(path, "'%s' must be an ISO 8601 timestamp such as 2026-01-31T09:00:00Z.", name)
			return protoreflect.Value{}, false
		}
		if t.Year() < 1 || t.Year() > 9999 {
			d.fail(path, "'%s' is out of range.", name)
			return protoreflect.Value{}, false
		}
		m.Set(md.Fields().ByName("seconds"), protoreflect.ValueOfInt64(t.Unix()))
		m.Set(md.Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(t.Nanosecond())))
		return v, true
	case structName, valueName, listValueName:
		if !d.structpb(m, raw, path) {
			return protoreflect.Value{}, false
		}
		return v, true
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		d.fail(path, "'%s' must be an object.", name)
		return protoreflect.Value{}, false
	}
	d.object(obj, m, path, resource)
	return v, true
}

// structpb fills a google.protobuf.Struct, Value or ListValue from raw.
func (d *decoder) structpb(m protoreflect.Message, raw any, path string) bool {
	switch m.Descriptor().FullName() {
	case structName:
		return d.structFields(m, raw, path)
	case listValueName:
		return d.listValues(m, raw, path)
	case valueName:
		return d.jsonValue(m, raw, path)
	}
	return true
}

// structFields fills a google.protobuf.Struct from raw, which must be an
// object.
func (d *decoder) structFields(m protoreflect.Message, raw any, path string) bool {
	obj, ok := raw.(map[string]any)
	if !ok {
		d.fail(path, "'%s' must be an object.", lastSegment(path))
		return false
	}
	mp := m.Mutable(m.Descriptor().Fields().ByName("fields")).Map()
	for k, el := range obj {
		if !d.text(path, k) {
			return false
		}
		val := mp.NewValue()
		if !d.structpb(val.Message(), el, path+"."+k) {
			return false
		}
		mp.Set(protoreflect.ValueOfString(k).MapKey(), val)
	}
	return true
}

// listValues fills a google.protobuf.ListValue from raw, which must be an
// array.
func (d *decoder) listValues(m protoreflect.Message, raw any, path string) bool {
	arr, ok := raw.([]any)
	if !ok {
		d.fail(path, "'%s' must be an array.", lastSegment(path))
		return false
	}
	list := m.Mutable(m.Descriptor().Fields().ByName("values")).List()
	for i, el := range arr {
		val := list.NewElement()
		if !d.structpb(val.Message(), el, fmt.Sprintf("%s[%d]", path, i)) {
			return false
		}
		list.Append(val)
	}
	return true
}

// jsonValue fills a google.protobuf.Value with whichever kind of JSON value
// raw is.
func (d *decoder) jsonValue(m protoreflect.Message, raw any, path string) bool {
	f := m.Descriptor().Fields()
	switch r := raw.(type) {
	case nil:
		m.Set(f.ByName("null_value"), protoreflect.ValueOfEnum(0))
	case bool:
		m.Set(f.ByName("bool_value"), protoreflect.ValueOfBool(r))
	case string:
		if !d.text(path, r) {
			return false
		}
		m.Set(f.ByName("string_value"), protoreflect.ValueOfString(r))
	case json.Number:
		x, err := strconv.ParseFloat(string(r), 64)
		if err != nil || math.IsInf(x, 0) {
			d.fail(path, "'%s' must be a finite number.", lastSegment(path))
			return false
		}
		m.Set(f.ByName("number_value"), protoreflect.ValueOfFloat64(x))
	case map[string]any:
		return d.setStructpb(m, f.ByName("struct_value"), r, path)
	case []any:
		return d.setStructpb(m, f.ByName("list_value"), r, path)
	}
	return true
}

// setStructpb sets m's Struct or ListValue field fd to raw, and leaves it
// unset when raw is refused.
func (d *decoder) setStructpb(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, path string) bool {
	v := m.NewField(fd)
	if !d.structpb(v.Message(), raw, path) {
		return false
	}
	m.Set(fd, v)
	return true
}
