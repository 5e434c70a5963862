package wirejson

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
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
	err := Unmarshal([]byte(`{"Name":"job","SCOPES":["a","b"],"expiresAt":"2027-01-02T03:04:05.5Z","tenant_id":null}`), &req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetName() != "job" || strings.Join(req.GetScopes(), ",") != "a,b" ||
		!req.GetExpiresAt().AsTime().Equal(time.Date(2027, 1, 2, 3, 4, 5, 5e8, time.UTC)) || req.GetTenantId() != "" {
		t.Errorf("got %v", &req)
	}
}

// TestUnmarshalNullValue: null sent for a JSON-value field is kept as
// null, so a PATCH can clear with null what an absent property leaves.
func TestUnmarshalNullValue(t *testing.T) {
	for _, c := range []struct {
		body        string
		set, isNull bool
	}{
		{`{"endDate":null}`, true, true},
		{`{"endDate":"2027-01-01"}`, true, false},
		{`{"campaignId":null}`, false, false},
	} {
		var req ordersv1.AmendRecurringDonationRequest
		if err := Unmarshal([]byte(c.body), &req); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		_, isNull := req.GetEndDate().GetKind().(*structpb.Value_NullValue)
		if (req.EndDate != nil) != c.set || isNull != c.isNull {
			t.Errorf("%s: endDate = %v, want set %v, null %v", c.body, req.GetEndDate(), c.set, c.isNull)
		}
		if req.CampaignId != nil {
			t.Errorf("%s: campaignId = %q, want unset", c.body, req.GetCampaignId())
		}
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
		var de *DecodeError
		ok := errors.As(err, &de)
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

// TestUnmarshalIntegerMapKeys: a map keyed by integers refuses a key that
// is no integer, or out of range, under the key's path, and never panics.
func TestUnmarshalIntegerMapKeys(t *testing.T) {
	var ok contactsv1.ResolveContactsResponse
	if err := Unmarshal([]byte(`{"byContactId":{"12":34,"-5":6}}`), &ok); err != nil || ok.GetByContactId()[12] != 34 || ok.GetByContactId()[-5] != 6 {
		t.Fatalf("integer keys: %v, %v", ok.GetByContactId(), err)
	}
	for _, body := range []string{`{"byContactId":{"x":1}}`, `{"byContactId":{"1.5":1}}`, `{"byContactId":{"99999999999999999999":1}}`, `{"byContactId":{"":1}}`} {
		var m contactsv1.ResolveContactsResponse
		err := Unmarshal([]byte(body), &m)
		var de *DecodeError
		isDecode := errors.As(err, &de)
		if !isDecode || len(de.Violations) != 1 || !strings.HasPrefix(de.Violations[0].Field, "ByContactId") {
			t.Errorf("%s: err = %v, want one violation under ByContactId", body, err)
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
	val, ok := dec.message(v.ProtoReflect().Descriptor(), json.Number("100.10"), "Amount", newDecimal, nil)
	if !ok || val.Message().Interface().(*typev1.Decimal).GetValue() != "100.10" {
		t.Fatalf("got %v %v", val, dec.violations)
	}
	for _, bad := range []any{json.Number("1e3"), "abc", true, json.Number("01")} {
		dec := &decoder{}
		if _, ok := dec.message(v.ProtoReflect().Descriptor(), bad, "Amount", newDecimal, nil); ok || len(dec.violations) != 1 || dec.violations[0].Field != "Amount" {
			t.Errorf("%v accepted: %v", bad, dec.violations)
		}
	}
}

func TestUnmarshalQuery(t *testing.T) {
	var req authv1.CreateApiKeyRequest
	err := UnmarshalQuery(url.Values{"name": {"x"}, "scopes": {"a,b", "c"}}, &req,
		func(name string) bool { return name == "tenant_id" })
	if err != nil {
		t.Fatal(err)
	}
	if req.GetName() != "x" || strings.Join(req.GetScopes(), ",") != "a,b,c" || req.GetTenantId() != "" {
		t.Errorf("got %v", &req)
	}
}

// TestUnmarshalQueryRefusesUnknownNames: a parameter that names no field,
// or one the path sets, is a violation under its name; the request's own
// names pass in either spelling.
func TestUnmarshalQueryRefusesUnknownNames(t *testing.T) {
	skipTenant := func(name string) bool { return name == "tenant_id" }
	cases := []struct {
		query url.Values
		want  map[string]string // violation key -> part of its message
	}{
		{url.Values{"statuss": {"Voided"}}, map[string]string{"Statuss": "'Statuss' is not a query parameter of this request."}},
		{url.Values{"status": {"Voided"}, "minAmount.value": {"5"}}, map[string]string{"MinAmount.value": "is not a query parameter"}},
		{url.Values{"tenantId": {"evil"}}, map[string]string{"TenantId": "'TenantId' cannot be set in the query string."}},
		{url.Values{"TENANT_ID": {"evil"}, "x": {""}}, map[string]string{"TenantId": "cannot be set", "X": "not a query parameter"}},
		{url.Values{strings.Repeat("q", 500): {"1"}}, map[string]string{"Q" + strings.Repeat("q", 63) + "…": "not a query parameter"}},
		{url.Values{"status": {"Voided"}, "MinAmount": {"5.00"}, "max_amount": {"9"}, "PAGE": {"2"}, "pageSize": {"10"}}, nil},
	}
	for _, c := range cases {
		var req ordersv1.ListOrdersRequest
		err := UnmarshalQuery(c.query, &req, skipTenant)
		if c.want == nil {
			if err != nil || req.GetMinAmount().GetValue() != "5.00" || req.GetMaxAmount().GetValue() != "9" || req.GetPage() != 2 {
				t.Errorf("%v: err %v, request %v", c.query, err, &req)
			}
			continue
		}
		var de *DecodeError
		ok := errors.As(err, &de)
		if !ok {
			t.Errorf("%v: err = %v, want a DecodeError", c.query, err)
			continue
		}
		got := map[string]string{}
		for _, v := range de.Violations {
			got[v.Field] = v.Message
		}
		if len(got) != len(c.want) {
			t.Errorf("%v: violations %v, want keys of %v", c.query, got, c.want)
		}
		for k, msg := range c.want {
			if !strings.Contains(got[k], msg) {
				t.Errorf("%v: violation under %q is %q, want it to say %q", c.query, k, got[k], msg)
			}
		}
	}
}

// TestUnmarshalRefusesUnknownProperties: a property that is not a field of
// the request is a violation under its path at any depth, unless the
// resource the request creates returns it there; a property the path sets
// is refused at the top.
func TestUnmarshalRefusesUnknownProperties(t *testing.T) {
	orderOpts := Options{
		Resource: (&ordersv1.Order{}).ProtoReflect().Descriptor(),
		Bound:    func(name string) bool { return name == "tenant_id" },
	}
	contactOpts := Options{Resource: (&contactsv1.Contact{}).ProtoReflect().Descriptor()}
	cases := []struct {
		name string
		opts Options
		msg  proto.Message
		body string
		want map[string]string // violation key -> part of its message; nil: accepted
	}{
		{"a misspelt refund amount", Options{}, &ordersv1.CreateOrderRefundRequest{}, `{"ammount":5}`,
			map[string]string{"Ammount": "'Ammount' is not a property of this request."}},
		{"a misspelt schedule list", orderOpts, &ordersv1.CreateOrderRequest{}, `{"contactId":1,"recurringDonation":[{"amount":5}]}`,
			map[string]string{"RecurringDonation": "is not a property"}},
		{"in a list element", orderOpts, &ordersv1.CreateOrderRequest{}, `{"items":[{"itemId":"a","quantity":1},{"itemId":"b","quantty":2}]}`,
			map[string]string{"Items[1].Quantty": "'Quantty' is not a property of this request."}},
		{"in a nested object", orderOpts, &ordersv1.CreateOrderRequest{}, `{"donations":[{"fundId":"f","amount":1,"tribute":{"name":"A","notifyPhone":"1"}}],"billingAddress":{"line1":"x","zip":"1"}}`,
			map[string]string{"Donations[0].Tribute.NotifyPhone": "is not a property", "BillingAddress.Zip": "is not a property"}},
		{"set by the path", orderOpts, &ordersv1.CreateOrderRequest{}, `{"contactId":1,"tenantId":"x"}`,
			map[string]string{"TenantId": "'TenantId' is set by the request's path, not its body."}},
		{"a misspelt first name", contactOpts, &contactsv1.ContactInput{}, `{"contactType":"Individual","frstName":"Jane"}`,
			map[string]string{"FrstName": "is not a property"}},
		{"a name too long to repeat", Options{}, &ordersv1.CreateOrderRefundRequest{}, `{"` + strings.Repeat("é", 100) + `":1}`,
			map[string]string{"É" + strings.Repeat("é", 31) + "…": "is not a property"}},
		{"without a resource, its properties are unknown", Options{}, &ordersv1.CreateOrderRequest{}, `{"contactId":1,"orderNumber":3}`,
			map[string]string{"OrderNumber": "is not a property"}},
		{"what the order returns", orderOpts, &ordersv1.CreateOrderRequest{},
			`{"id":"o1","orderNumber":3,"contactId":1,"orderStatus":"Completed","TotalAmount":5.00,"created_at":"2026-01-01T00:00:00Z","refundedAmount":null,
			  "items":[{"lineNumber":1,"itemId":"a","sku":"S","quantity":1,"unitPrice":5.00,"lineTotal":5.00}],
			  "donations":[{"id":"d","fundId":"f","fundName":"General","amount":1,"isTaxDeductible":true,"tribute":null}],
			  "payments":[{"id":"p","paymentMethod":"Cash","amount":6,"paymentStatus":"Captured","nextAction":{"type":"x"}}]}`, nil},
		{"what the contact returns", contactOpts, &contactsv1.ContactInput{},
			`{"id":7,"contactType":"Individual","firstName":"Jane","createdAt":"2026-01-01T00:00:00Z","updatedAt":"x",
			  "relationships":[{"relatedContactId":8,"relationshipType":"Spouse","relatedContactName":"John","relatedContactType":"Individual"}]}`, nil},
		{"free-form parameters", Options{}, &reportsv1.CreateReportRequest{}, `{"name":"x","parameters":{"Anything":1,"Else":{"deep":[1]}}}`, nil},
		{"one property twice in two cases", contactOpts, &contactsv1.ContactInput{}, `{"CONTACTTYPE":"1e3","contactType":"Individual","lastName":"Donor"}`,
			map[string]string{"ContactType": "'ContactType' is given twice ('CONTACTTYPE' and 'contactType')"}},
		{"twice in a nested object", orderOpts, &ordersv1.CreateOrderRequest{}, `{"billingAddress":{"line1":"x","LINE1":"y"}}`,
			map[string]string{"BillingAddress.Line1": "is given twice"}},
	}
	for _, c := range cases {
		err := c.opts.Unmarshal([]byte(c.body), c.msg)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var de *DecodeError
		ok := errors.As(err, &de)
		if !ok {
			t.Errorf("%s: err = %v, want a DecodeError", c.name, err)
			continue
		}
		got := map[string]string{}
		for _, v := range de.Violations {
			got[v.Field] = v.Message
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: violations %v, want keys of %v", c.name, got, c.want)
		}
		for k, msg := range c.want {
			if !strings.Contains(got[k], msg) {
				t.Errorf("%s: violation under %q is %q, want it to say %q", c.name, k, got[k], msg)
			}
		}
	}
	// What was accepted was read: the known fields, not the returned ones.
	var order ordersv1.CreateOrderRequest
	if err := orderOpts.Unmarshal([]byte(`{"contactId":1,"id":"o1","items":[{"itemId":"a","quantity":2,"lineTotal":9}]}`), &order); err != nil {
		t.Fatal(err)
	}
	if order.GetContactId() != 1 || len(order.GetItems()) != 1 || order.GetItems()[0].GetQuantity() != 2 {
		t.Errorf("decoded %v", &order)
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
			var de *DecodeError
			ok := errors.As(err, &de)
			if !ok || len(de.Violations) != 1 || de.Violations[0].Field != c.field || !strings.Contains(de.Violations[0].Message, "NUL") {
				t.Errorf("%s: err = %v, want one NUL violation under %s", c.body, err, c.field)
			}
		}
	}
	for _, q := range []url.Values{{"name": {"a\x00"}}, {"NAME": {"\x00"}}, {"scopes": {"a,\x00b"}}, {"name": {"caf\xe9"}}} {
		var req authv1.CreateApiKeyRequest
		err := UnmarshalQuery(q, &req, nil)
		var de *DecodeError
		ok := errors.As(err, &de)
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
	value := func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
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

// definedOnly reports the first property of raw, at any depth, that is
// neither a field of md nor returned by resource at that path: what a
// body that decoded must not contain. It reads the JSON on its own
// (encoding/json), apart from the decoder it checks.
func definedOnly(raw any, md, resource protoreflect.MessageDescriptor) string {
	obj, ok := raw.(map[string]any)
	if !ok {
		return ""
	}
	switch md.FullName() {
	case structName, valueName, listValueName, decimalName, timestampName:
		return ""
	}
	find := func(fields protoreflect.FieldDescriptors, key string) protoreflect.FieldDescriptor {
		for i := range fields.Len() {
			fd := fields.Get(i)
			if strings.EqualFold(fd.JSONName(), key) || strings.EqualFold(string(fd.Name()), key) {
				return fd
			}
		}
		return nil
	}
	for key, v := range obj {
		fd := find(md.Fields(), key)
		if fd == nil {
			if resource == nil || find(resource.Fields(), key) == nil {
				return key
			}
			continue
		}
		if fd.Message() == nil || fd.IsMap() {
			continue
		}
		var sub protoreflect.MessageDescriptor
		if resource != nil {
			if rf := find(resource.Fields(), fd.JSONName()); rf != nil && !rf.IsMap() {
				sub = rf.Message()
			}
		}
		els := []any{v}
		if fd.IsList() {
			els, _ = v.([]any)
		}
		for _, el := range els {
			if bad := definedOnly(el, fd.Message(), sub); bad != "" {
				return key + "." + bad
			}
		}
	}
	return ""
}

// FuzzUnmarshal: no body panics; whatever decodes encodes again, holds no
// string PostgreSQL would refuse (NUL) or protobuf could not carry, and
// named only properties the request defines or its resource returns; a
// refusal's text survives the trip through a status message.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"a","scopes":["x"],"expiresAt":"2027-01-01T00:00:00Z"}`, `{"scopes":[1,{}]}`, `[`, `null`,
		`{"name":"a\u0000b"}`, `{"parameters":{"a\u0000":["\u0000",{"b":"\u0000"}]}}`, "{\"name\":\"\xff\"}",
		`{"nmae":"a"}`, `{"Name":"a","createdAt":"x","id":1}`, `{"items":[{"itemId":"a","quantty":1,"lineTotal":1}],"recurringDonation":[]}`,
		`{"donations":[{"fundId":"f","amount":1,"tribute":{"name":"x","notify":1}}],"orderNumber":1,"tenantId":"t"}`,
		`{"byContactId":{"1":2},"byExternalId":{"a":3}}`} {
		f.Add([]byte(s))
	}
	orderOpts := Options{Resource: (&ordersv1.Order{}).ProtoReflect().Descriptor(), Bound: func(n string) bool { return n == "tenant_id" }}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []struct {
			opts Options
			m    proto.Message
		}{{Options{}, &authv1.CreateApiKeyRequest{}}, {Options{}, &reportsv1.CreateReportRequest{}}, {orderOpts, &ordersv1.CreateOrderRequest{}},
			// Integer map keys: no request has them yet.
			{Options{}, &contactsv1.ResolveContactsResponse{}}} {
			m := c.m
			proto.Reset(m)
			err := c.opts.Unmarshal(data, m)
			if err == nil {
				// Whatever decoded must encode again.
				if _, err := Marshal(m); err != nil {
					t.Fatalf("decoded %q but cannot encode: %v", data, err)
				}
				if b := badText(m.ProtoReflect()); b != "" {
					t.Fatalf("decoded %q with the string %q", data, b)
				}
				var raw any
				if json.Unmarshal(data, &raw) == nil {
					if bad := definedOnly(raw, m.ProtoReflect().Descriptor(), c.opts.Resource); bad != "" {
						t.Fatalf("decoded %q with the unknown property %q into %T", data, bad, m)
					}
					if obj, ok := raw.(map[string]any); ok && c.opts.Bound != nil {
						for k := range obj {
							if strings.EqualFold(k, "tenantId") || strings.EqualFold(k, "tenant_id") {
								t.Fatalf("decoded %q with the path's %q set", data, k)
							}
						}
					}
				}
				continue
			}
			if de := (*DecodeError)(nil); errors.As(err, &de) {
				if _, ok := ParseDecodeError(de.Error()); !ok {
					t.Fatalf("DecodeError text does not parse: %q", de.Error())
				}
			}
		}
	})
}

// FuzzUnmarshalQuery: a query string decodes to strings PostgreSQL and
// protobuf accept and names only the request's own parameters, or is
// refused with a violation.
func FuzzUnmarshalQuery(f *testing.F) {
	for _, s := range []string{"name=x", "name=%00", "scopes=a,%00", "name=%ff", "expiresAt=2027-01-01T00:00:00Z",
		"statuss=Voided", "status=Voided&minAmount.value=5", "tenantId=x", "Page=2&page_size=3&minAmount=1.00", "%ff=1", "=1"} {
		f.Add(s)
	}
	skip := func(n string) bool { return n == "tenant_id" }
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for _, m := range []proto.Message{&authv1.CreateApiKeyRequest{}, &ordersv1.ListOrdersRequest{}} {
			if err := UnmarshalQuery(q, m, skip); err != nil {
				var de *DecodeError
				ok := errors.As(err, &de)
				if !ok {
					t.Fatalf("%q: %v is not a DecodeError", raw, err)
				}
				if _, ok := ParseDecodeError(de.Error()); !ok {
					t.Fatalf("DecodeError text does not parse: %q", de.Error())
				}
				continue
			}
			if b := badText(m.ProtoReflect()); b != "" {
				t.Fatalf("decoded %q with the string %q", raw, b)
			}
			for name := range q {
				fd := m.ProtoReflect().Descriptor().Fields().ByJSONName(name)
				if fd == nil {
					fd = fieldByJSONName(m.ProtoReflect().Descriptor().Fields(), name)
				}
				if fd == nil || skip(string(fd.Name())) {
					t.Fatalf("decoded %q although %q is not a parameter of %T", raw, name, m)
				}
			}
		}
	})
}

// TestStringListsOfGeneratedMessages: a generated message's repeated
// strings, read from its Go field, encode as the same message does
// through protoreflect (dynamicpb); a message without such a field, or
// another kind of list, is not read that way.
func TestStringListsOfGeneratedMessages(t *testing.T) {
	created := timestamppb.New(time.Date(2026, 4, 12, 9, 30, 0, 0, time.UTC))
	for _, m := range []proto.Message{
		&authv1.ApiKey{Id: "k", Scopes: []string{"contacts:view", "a\"b", "é"}, CreatedAt: created},
		&authv1.ApiKey{Id: "k", Scopes: []string{}, CreatedAt: created},
		&authv1.ValidateKeyResponse{TenantId: "t", Scopes: []string{"x"}, Features: []string{"api-access:enabled", "webhooks:enabled"}},
	} {
		got, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		dyn := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(b, dyn); err != nil {
			t.Fatal(err)
		}
		want, err := Marshal(dyn)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("generated %s\n dynamic %s", got, want)
		}
		if _, ok := stringList(dyn, dyn.Descriptor().Fields().ByName("scopes")); ok {
			t.Error("a dynamic message was read as a Go struct")
		}
	}
	key := (&authv1.ApiKey{}).ProtoReflect()
	if _, ok := stringList(key, key.Descriptor().Fields().ByName("name")); ok {
		t.Error("a string that is no list was read as one")
	}
}

// BenchmarkMarshalStringList: the ApiKey of an all-scope key.
func BenchmarkMarshalStringList(b *testing.B) {
	m := &authv1.ApiKey{Id: "k", Name: "bench", Scopes: strings.Split(strings.Repeat("contacts:view,", 46)+"orders:void", ","), CreatedAt: timestamppb.Now()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}
