package wirejson

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
)

func TestMarshal(t *testing.T) {
	created := time.Date(2026, 4, 12, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		name string
		in   any
		want string
	}{
		{
			"unset message is null, lists empty",
			&authv1.ApiKey{Id: "k", Name: "n", CreatedAt: timestamppb.New(created)},
			`{"id":"k","name":"n","keyPrefix":"","scopes":[],"expiresAt":null,"lastUsedAt":null,"createdAt":"2026-04-12T09:30:00Z"}`,
		},
		{
			"slice of messages is an array",
			[]*authv1.ApiKey{},
			`[]`,
		},
		{
			"decimal is a bare number with its digits",
			&typev1.Decimal{Value: "100.00"},
			`100.00`,
		},
		{
			"empty decimal is null",
			&typev1.Decimal{},
			`null`,
		},
		{
			"strings are escaped, html is not",
			&authv1.ApiKey{Name: "a\"b\\c\n<&>\u2028\x01", CreatedAt: timestamppb.New(created)},
			`{"id":"","name":"a\"b\\c\n<&>\u2028\u0001","keyPrefix":"","scopes":[],"expiresAt":null,"lastUsedAt":null,"createdAt":"2026-04-12T09:30:00Z"}`,
		},
		{
			"struct values",
			mustStruct(t, map[string]any{"b": true, "a": []any{1.5, "x", nil}}),
			`{"a":[1.5,"x",null],"b":true}`,
		},
	}
	for _, c := range cases {
		got, err := Marshal(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON %s", c.name, got)
		}
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMarshalRejectsBadDecimal(t *testing.T) {
	for _, v := range []string{"1e5", "01", "1.", "abc", "NaN"} {
		if _, err := Marshal(&typev1.Decimal{Value: v}); err == nil {
			t.Errorf("Marshal(Decimal %q) succeeded", v)
		}
	}
}

func TestUnmarshal(t *testing.T) {
	var req authv1.CreateApiKeyRequest
	err := Unmarshal([]byte(`{"Name":"job","SCOPES":["a","b"],"expiresAt":"2027-01-02T03:04:05.5Z","unknown":{"x":1},"tenantId":null}`), &req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetName() != "job" || strings.Join(req.GetScopes(), ",") != "a,b" ||
		!req.GetExpiresAt().AsTime().Equal(time.Date(2027, 1, 2, 3, 4, 5, 5e8, time.UTC)) || req.GetTenantId() != "" {
		t.Errorf("got %v", &req)
	}
}

func TestUnmarshalViolations(t *testing.T) {
	cases := []struct {
		body string
		want []string
	}{
		{`{`, []string{"$"}},
		{`"x"`, []string{"$"}},
		{`{} {}`, []string{"$"}},
		{`{"name":1}`, []string{"Name"}},
		{`{"scopes":{}}`, []string{"Scopes"}},
		{`{"scopes":["a",2,true]}`, []string{"Scopes[1]", "Scopes[2]"}},
		{`{"expiresAt":"yesterday"}`, []string{"ExpiresAt"}},
		{`{"expiresAt":12}`, []string{"ExpiresAt"}},
	}
	for _, c := range cases {
		var req authv1.CreateApiKeyRequest
		err := Unmarshal([]byte(c.body), &req)
		de, ok := err.(*DecodeError)
		if !ok {
			t.Errorf("%s: err = %v, want a DecodeError", c.body, err)
			continue
		}
		got := map[string]bool{}
		for _, v := range de.Violations {
			got[v.Field] = true
		}
		for _, f := range c.want {
			if !got[f] {
				t.Errorf("%s: violations %v lack %s", c.body, de.Violations, f)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: violations %v, want %v", c.body, de.Violations, c.want)
		}
		// The text survives the trip through a status message.
		m, ok := ParseDecodeError(de.Error())
		if !ok || len(m) != len(c.want) {
			t.Errorf("%s: ParseDecodeError(%q) = %v", c.body, de.Error(), m)
		}
	}
}

func newDecimal() protoreflect.Value {
	return protoreflect.ValueOfMessage((&typev1.Decimal{}).ProtoReflect())
}

func TestDecimalFromJSON(t *testing.T) {
	// Decimal fields keep the literal digits of the JSON number.
	var v typev1.Decimal
	dec := &decoder{}
	val, ok := dec.message(v.ProtoReflect().Descriptor(), json.Number("100.10"), "Amount", newDecimal)
	if !ok || val.Message().Interface().(*typev1.Decimal).GetValue() != "100.10" {
		t.Fatalf("got %v %v", val, dec.violations)
	}
	for _, bad := range []any{json.Number("1e3"), "abc", true, json.Number("01")} {
		dec := &decoder{}
		if _, ok := dec.message(v.ProtoReflect().Descriptor(), bad, "Amount", newDecimal); ok || len(dec.violations) != 1 || dec.violations[0].Field != "Amount" {
			t.Errorf("%v accepted: %v", bad, dec.violations)
		}
	}
}

func TestUnmarshalQuery(t *testing.T) {
	var req authv1.CreateApiKeyRequest
	err := UnmarshalQuery(url.Values{"name": {"x"}, "scopes": {"a,b", "c"}, "tenantId": {"evil"}}, &req,
		func(name string) bool { return name == "tenant_id" })
	if err != nil {
		t.Fatal(err)
	}
	if req.GetName() != "x" || strings.Join(req.GetScopes(), ",") != "a,b,c" || req.GetTenantId() != "" {
		t.Errorf("got %v", &req)
	}
}

// TestUnmarshalRejectsNUL: a NUL character, which PostgreSQL text cannot
// hold, is a violation under the property's path wherever a string is
// decoded — a field, a list element, a Struct key or value — and so is
// text that is not UTF-8 in a query string.
func TestUnmarshalRejectsNUL(t *testing.T) {
	cases := []struct {
		body  string
		field string
	}{
		{`{"name":"a\u0000b"}`, "Name"},
		{`{"name":"\u0000"}`, "Name"},
		{`{"name":"ok","scopes":["a","b\u0000"]}`, "Scopes[1]"},
		{`{"name":"ok","parameters":{"From":"2026\u0000"}}`, "Parameters.From"},
		{`{"name":"ok","parameters":{"F\u0000":"x"}}`, "Parameters"},
		{`{"name":"ok","parameters":{"List":["x",{"y":"\u0000"}]}}`, "Parameters.List[1].y"},
	}
	for _, c := range cases {
		for _, m := range []proto.Message{&authv1.CreateApiKeyRequest{}, &reportsv1.CreateReportRequest{}} {
			if strings.Contains(c.body, "parameters") != (m.ProtoReflect().Descriptor().Fields().ByName("parameters") != nil) {
				continue
			}
			err := Unmarshal([]byte(c.body), m)
			de, ok := err.(*DecodeError)
			if !ok || len(de.Violations) != 1 || de.Violations[0].Field != c.field || !strings.Contains(de.Violations[0].Message, "NUL") {
				t.Errorf("%s: err = %v, want one NUL violation under %s", c.body, err, c.field)
			}
		}
	}
	for _, q := range []url.Values{{"name": {"a\x00"}}, {"NAME": {"\x00"}}, {"scopes": {"a,\x00b"}}, {"name": {"caf\xe9"}}} {
		var req authv1.CreateApiKeyRequest
		err := UnmarshalQuery(q, &req, nil)
		de, ok := err.(*DecodeError)
		if !ok || len(de.Violations) != 1 || (de.Violations[0].Field != "Name" && de.Violations[0].Field != "Scopes[1]") {
			t.Errorf("query %q: err = %v, want one violation under the parameter's name", q, err)
		}
	}
	// Other control characters are the services' business (multi-line
	// notes keep their line breaks).
	var req authv1.CreateApiKeyRequest
	if err := Unmarshal([]byte(`{"name":"a\tb\nc"}`), &req); err != nil || req.GetName() != "a\tb\nc" {
		t.Errorf("tab and newline: %v %q", err, req.GetName())
	}
}

// badText reports a string anywhere in m that could not be stored as
// PostgreSQL text or sent as a protobuf string.
func badText(m protoreflect.Message) string {
	bad := ""
	check := func(s string) {
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			bad = s
		}
	}
	var value func(fd protoreflect.FieldDescriptor, v protoreflect.Value)
	value = func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
		switch fd.Kind() {
		case protoreflect.StringKind:
			check(v.String())
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if b := badText(v.Message()); b != "" {
				bad = b
			}
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				value(fd, v.List().Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				check(k.String())
				value(fd.MapValue(), mv)
				return true
			})
		default:
			value(fd, v)
		}
		return true
	})
	return bad
}

// FuzzUnmarshal: no body panics; whatever decodes encodes again and holds
// no string PostgreSQL would refuse (NUL) or protobuf could not carry; a
// refusal's text survives the trip through a status message.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"a","scopes":["x"],"expiresAt":"2027-01-01T00:00:00Z"}`, `{"scopes":[1,{}]}`, `[`, `null`,
		`{"name":"a\u0000b"}`, `{"parameters":{"a\u0000":["\u0000",{"b":"\u0000"}]}}`, "{\"name\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []proto.Message{&authv1.CreateApiKeyRequest{}, &reportsv1.CreateReportRequest{}} {
			err := Unmarshal(data, m)
			if err == nil {
				// Whatever decoded must encode again.
				if _, err := Marshal(m); err != nil {
					t.Fatalf("decoded %q but cannot encode: %v", data, err)
				}
				if b := badText(m.ProtoReflect()); b != "" {
					t.Fatalf("decoded %q with the string %q", data, b)
				}
				continue
			}
			if de, ok := err.(*DecodeError); ok {
				if _, ok := ParseDecodeError(de.Error()); !ok {
					t.Fatalf("DecodeError text does not parse: %q", de.Error())
				}
			}
		}
	})
}

// FuzzUnmarshalQuery: a query string decodes to strings PostgreSQL and
// protobuf accept, or is refused with a violation.
func FuzzUnmarshalQuery(f *testing.F) {
	for _, s := range []string{"name=x", "name=%00", "scopes=a,%00", "name=%ff", "expiresAt=2027-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		var req authv1.CreateApiKeyRequest
		if err := UnmarshalQuery(q, &req, nil); err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("%q: %v is not a DecodeError", raw, err)
			}
			return
		}
		if b := badText(req.ProtoReflect()); b != "" {
			t.Fatalf("decoded %q with the string %q", raw, b)
		}
	})
}
