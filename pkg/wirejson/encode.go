// Package wirejson is the REST edge's JSON codec for protobuf messages.
//
// It exists because the wire shapes integrators already use differ from
// protojson in three ways: 64-bit integers (contact ids, order numbers) are
// JSON numbers, amounts are bare decimal numbers written with their exact
// digits (`100.00`), and request property paths in errors are PascalCase
// (`Items[0].Quantity`). Everything else follows protojson: lowerCamel field
// names, RFC 3339 timestamps in UTC, every field present (unset messages and
// optional scalars as null, empty lists as []).
package wirejson

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Well-known message names the codec renders specially.
const (
	decimalName   protoreflect.FullName = "almoner.type.v1.Decimal"
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
	structName    protoreflect.FullName = "google.protobuf.Struct"
	valueName     protoreflect.FullName = "google.protobuf.Value"
	listValueName protoreflect.FullName = "google.protobuf.ListValue"
	emptyName     protoreflect.FullName = "google.protobuf.Empty"
)

// Marshal encodes v, which is a proto.Message, a slice of proto.Message (a
// repeated response_body), or a plain Go value (encoded with encoding/json).
func Marshal(v any) ([]byte, error) {
	e := &encoder{buf: make([]byte, 0, 256)}
	if err := e.any(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type encoder struct {
	buf []byte
}

func (e *encoder) any(v any) error {
	switch m := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
		return nil
	case proto.Message:
		return e.message(m.ProtoReflect())
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Implements(reflect.TypeFor[proto.Message]()) {
		e.buf = append(e.buf, '[')
		for i := range rv.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.message(rv.Index(i).Interface().(proto.Message).ProtoReflect()); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.buf = append(e.buf, b...)
	return nil
}

func (e *encoder) message(m protoreflect.Message) error {
	if !m.IsValid() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	switch m.Descriptor().FullName() {
	case decimalName:
		return e.decimal(m)
	case timestampName:
		return e.timestamp(m)
	case structName, valueName, listValueName:
		return e.structpb(m)
	}
	fields := m.Descriptor().Fields()
	e.buf = append(e.buf, '{')
	first := true
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && m.WhichOneof(od) != fd {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.string(fd.JSONName())
		e.buf = append(e.buf, ':')
		if err := e.field(m, fd); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

func (e *encoder) field(m protoreflect.Message, fd protoreflect.FieldDescriptor) error {
	switch {
	case fd.IsList() && fd.Kind() == protoreflect.StringKind:
		if l, ok := stringList(m, fd); ok {
			e.buf = append(e.buf, '[')
			for i := range l.Len() {
				if i > 0 {
					e.buf = append(e.buf, ',')
				}
				e.string(l.Index(i).String())
			}
			e.buf = append(e.buf, ']')
			return nil
		}
		fallthrough
	case fd.IsList():
		list := m.Get(fd).List()
		e.buf = append(e.buf, '[')
		for i := range list.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.singular(fd, list.Get(i)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		return nil
	case fd.IsMap():
		mp := m.Get(fd).Map()
		keys := make([]protoreflect.MapKey, 0, mp.Len())
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k)
			return true
		})
		sortMapKeys(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(k.String())
			e.buf = append(e.buf, ':')
			if err := e.singular(fd.MapValue(), mp.Get(k)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
		return nil
	case fd.Message() != nil && !m.Has(fd):
		e.buf = append(e.buf, "null"...)
		return nil
	case fd.HasPresence() && !m.Has(fd):
		e.buf = append(e.buf, "null"...)
		return nil
	}
	return e.singular(fd, m.Get(fd))
}

func (e *encoder) singular(fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("wirejson: %s is not a finite number", fd.FullName())
		}
		bits := 64
		if fd.Kind() == protoreflect.FloatKind {
			bits = 32
		}
		e.buf = strconv.AppendFloat(e.buf, f, 'f', -1, bits)
	case protoreflect.StringKind:
		e.string(v.String())
	case protoreflect.BytesKind:
		e.string(base64.StdEncoding.EncodeToString(v.Bytes()))
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			e.string(string(ev.Name()))
		} else {
			e.buf = strconv.AppendInt(e.buf, int64(v.Enum()), 10)
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return e.message(v.Message())
	default:
		return fmt.Errorf("wirejson: unsupported kind %v", fd.Kind())
	}
	return nil
}

func (e *encoder) decimal(m protoreflect.Message) error {
	s := m.Get(m.Descriptor().Fields().ByName("value")).String()
	if s == "" {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	if !IsDecimalLiteral(s) {
		return fmt.Errorf("wirejson: %q is not a decimal literal", s)
	}
	e.buf = append(e.buf, s...)
	return nil
}

func (e *encoder) timestamp(m protoreflect.Message) error {
	fields := m.Descriptor().Fields()
	secs := m.Get(fields.ByName("seconds")).Int()
	nanos := m.Get(fields.ByName("nanos")).Int()
	t := time.Unix(secs, nanos).UTC()
	e.buf = append(e.buf, '"')
	e.buf = t.AppendFormat(e.buf, time.RFC3339Nano)
	e.buf = append(e.buf, '"')
	return nil
}

// structpb renders google.protobuf.Struct, Value and ListValue as plain JSON.
func (e *encoder) structpb(m protoreflect.Message) error {
	fields := m.Descriptor().Fields()
	switch m.Descriptor().FullName() {
	case structName:
		mp := m.Get(fields.ByName("fields")).Map()
		keys := make([]protoreflect.MapKey, 0, mp.Len())
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k)
			return true
		})
		sortMapKeys(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(k.String())
			e.buf = append(e.buf, ':')
			if err := e.structpb(mp.Get(k).Message()); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	case listValueName:
		list := m.Get(fields.ByName("values")).List()
		e.buf = append(e.buf, '[')
		for i := range list.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.structpb(list.Get(i).Message()); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case valueName:
		od := m.Descriptor().Oneofs().ByName("kind")
		fd := m.WhichOneof(od)
		if fd == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		v := m.Get(fd)
		switch fd.Name() {
		case "null_value":
			e.buf = append(e.buf, "null"...)
		case "number_value":
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("wirejson: Value is not a finite number")
			}
			e.buf = strconv.AppendFloat(e.buf, f, 'f', -1, 64)
		case "string_value":
			e.string(v.String())
		case "bool_value":
			e.buf = strconv.AppendBool(e.buf, v.Bool())
		default:
			return e.structpb(v.Message())
		}
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// string appends s as a JSON string. Unlike encoding/json it does not
// escape <, > and &: the API serves JSON, not HTML.
func (e *encoder) string(s string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				e.buf = append(e.buf, '\\', c)
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 break JavaScript string literals.
		if r == '\u2028' || r == '\u2029' {
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}

func sortMapKeys(keys []protoreflect.MapKey) {
	// Insertion sort is enough: maps on the wire are small, and a stable
	// order keeps responses byte-identical between calls.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j].String() < keys[j-1].String(); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// IsDecimalLiteral reports whether s is a plain JSON number without an
// exponent: an optional minus, digits, and an optional fraction.
func IsDecimalLiteral(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if digits == 0 || (digits > 1 && s[i-digits] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			frac++
		}
		if frac == 0 {
			return false
		}
	}
	return i == len(s)
}

// stringList returns the []string of a repeated string field of a
// generated message, as a reflect.Value of its Go struct's field: reading
// it through protoreflect.List boxes every element (List.Get converts it
// with reflect, an allocation per string; the 47 scopes of an all-scope
// key were 47 of the ≈ 440 allocations of GET api-keys). ok is false for
// any other message (dynamicpb), which takes the List.
func stringList(m protoreflect.Message, fd protoreflect.FieldDescriptor) (reflect.Value, bool) {
	rv := reflect.ValueOf(m.Interface())
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	i := stringListField(rv.Type(), fd.Number())
	if i < 0 {
		return reflect.Value{}, false
	}
	return rv.Elem().Field(i), true
}

// stringListKey names a field of a generated message type.
type stringListKey struct {
	t reflect.Type
	n protoreflect.FieldNumber
}

// stringListFields caches stringListField's answers (a map, not a
// sync.Map, so that looking a key up does not box it).
var stringListFields = struct {
	sync.RWMutex
	m map[stringListKey]int
}{m: map[stringListKey]int{}}

// stringListField returns the index in *t's struct of the []string field
// that protoc-gen-go generated for field number n (its protobuf tag is
// "bytes,<n>,rep,…"), or -1.
func stringListField(t reflect.Type, n protoreflect.FieldNumber) int {
	k := stringListKey{t, n}
	stringListFields.RLock()
	i, ok := stringListFields.m[k]
	stringListFields.RUnlock()
	if ok {
		return i
	}
	i = -1
	st := t.Elem()
	for j := range st.NumField() {
		f := st.Field(j)
		parts := strings.Split(f.Tag.Get("protobuf"), ",")
		if len(parts) > 2 && parts[1] == strconv.Itoa(int(n)) && parts[2] == "rep" && f.Type == reflect.TypeFor[[]string]() {
			i = j
			break
		}
	}
	stringListFields.Lock()
	stringListFields.m[k] = i
	stringListFields.Unlock()
	return i
}
