package wirejson

import (
	"encoding/json"
	"net/url"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// UnmarshalQuery fills top-level fields of m from a query string, with the
// same case-insensitive names, PascalCase error paths and DecodeError as
// Unmarshal. Repeated fields take the parameter once per element
// (`status=a&status=b`) or comma-separated (`status=a,b`).
//
// A parameter that names no field of m is refused (`?statuss=Voided`
// would otherwise list every order), and so is one naming a field for
// which skip (if not nil) returns true, or a map: the gateway passes the
// fields the path and the body set there, so a query string can never
// override the tenant in the path.
func UnmarshalQuery(values url.Values, m proto.Message, skip func(protoName string) bool) error {
	fields := m.ProtoReflect().Descriptor().Fields()
	obj := make(map[string]any, len(values))
	d := &decoder{}
	for key, vs := range values {
		fd := fieldByJSONName(fields, key)
		if fd == nil {
			name := PascalPath("", shownName(key))
			d.fail(name, "'%s' is not a query parameter of this request.", name)
			continue
		}
		if fd.IsMap() || (skip != nil && skip(string(fd.Name()))) {
			name := PascalPath("", fd.JSONName())
			d.fail(name, "'%s' cannot be set in the query string.", name)
			continue
		}
		if len(vs) == 0 {
			continue
		}
		if fd.IsList() {
			var list []any
			for _, v := range vs {
				for _, part := range strings.Split(v, ",") {
					if part = strings.TrimSpace(part); part != "" {
						list = append(list, queryValue(fd, part))
					}
				}
			}
			obj[fd.JSONName()] = list
			continue
		}
		obj[fd.JSONName()] = queryValue(fd, vs[len(vs)-1])
	}
	d.object(obj, m.ProtoReflect(), "", nil)
	if len(d.violations) > 0 {
		return &DecodeError{Violations: d.violations}
	}
	return nil
}

// queryValue gives a query string the JSON type the field expects, when it
// has that form; otherwise it stays a string and the decoder reports it.
func queryValue(fd protoreflect.FieldDescriptor, s string) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		switch strings.ToLower(s) {
		case "true", "1":
			return true
		case "false", "0":
			return false
		}
		return s
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind:
		return s
	case protoreflect.MessageKind:
		if fd.Message().FullName() == decimalName {
			return json.Number(s)
		}
		return s
	default:
		var n json.Number
		if json.Unmarshal([]byte(s), &n) == nil {
			return n
		}
		return s
	}
}
