package cohorts

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
)

// refusal returns the code and path of a Definition problem.
func refusal(t *testing.T, err error) (string, string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid || len(e.Violations) != 1 {
		t.Fatalf("want a Definition problem, got %v", err)
	}
	return e.Code, e.Violations[0].Field
}

func TestParseRefusals(t *testing.T) {
	deep := `{"field":"giftCount","op":">","value":1}`
	for i := 0; i < MaxDepth; i++ {
		deep = `{"not":` + deep + `}`
	}
	many := make([]string, MaxConditions+1)
	for i := range many {
		many[i] = `{"field":"giftCount","op":">","value":1}`
	}
	cases := []struct {
		name, def, code, path string
	}{
		{"not json", `{`, "Definition.Malformed", "definition"},
		{"two values", `{} {}`, "Definition.Malformed", "definition"},
		{"array at top", `[]`, "Definition.Malformed", "definition"},
		{"empty object", `{}`, "Definition.Malformed", "definition"},
		{"empty all", `{"all":[]}`, "Definition.Malformed", "definition.all"},
		{"all not array", `{"all":{}}`, "Definition.Malformed", "definition.all"},
		{"all with extra", `{"all":[{"field":"doNotEmail","op":"=","value":true}],"x":1}`, "Definition.Malformed", "definition"},
		{"not with extra", `{"not":{"field":"doNotEmail","op":"=","value":true},"y":1}`, "Definition.Malformed", "definition"},
		{"bad op in list", `{"all":[{"field":"doNotEmail","op":"=","value":true},{"field":"tags","op":"=","value":"a"},{"field":"giftCount","op":"~","value":1}]}`, "Definition.InvalidOperator", "definition.all[2].op"},
		{"op not for field", `{"field":"doNotEmail","op":"<","value":true}`, "Definition.InvalidOperator", "definition.op"},
		{"unknown field", `{"any":[{"field":"shoeSize","op":"=","value":1}]}`, "Definition.UnknownField", "definition.any[0].field"},
		{"missing value", `{"field":"giftCount","op":">"}`, "Definition.InvalidValue", "definition.value"},
		{"unknown key", `{"field":"giftCount","op":">","value":1,"sql":"1=1"}`, "Definition.Malformed", "definition.sql"},
		{"enum value", `{"field":"contactType","op":"=","value":"Robot"}`, "Definition.InvalidValue", "definition.value"},
		{"in not array", `{"field":"contactType","op":"in","value":"Individual"}`, "Definition.InvalidValue", "definition.value"},
		{"in empty", `{"field":"contactType","op":"in","value":[]}`, "Definition.InvalidValue", "definition.value"},
		{"in bad item", `{"field":"contactType","op":"in","value":["Individual",3]}`, "Definition.InvalidValue", "definition.value[1]"},
		{"between one", `{"field":"giftCount","op":"between","value":[1]}`, "Definition.InvalidValue", "definition.value"},
		{"between bad high", `{"field":"giftCount","op":"between","value":[1,"x"]}`, "Definition.InvalidValue", "definition.value[1]"},
		{"isNull not bool", `{"field":"tags","op":"isNull","value":"yes"}`, "Definition.InvalidValue", "definition.value"},
		{"bad date", `{"field":"createdAt","op":">","value":"2026-02-30"}`, "Definition.InvalidValue", "definition.value"},
		{"bad amount", `{"field":"totalGiven","op":">","value":"-5"}`, "Definition.InvalidValue", "definition.value"},
		{"fractional count", `{"field":"giftCount","op":">","value":1.5}`, "Definition.InvalidValue", "definition.value"},
		{"bool as text", `{"field":"doNotEmail","op":"=","value":"true"}`, "Definition.InvalidValue", "definition.value"},
		{"empty text", `{"field":"address.state","op":"=","value":""}`, "Definition.InvalidValue", "definition.value"},
		{"window on contact field", `{"field":"tags","op":"=","value":"a","window":{"from":"2026-01-01","to":"2026-02-01"}}`, "Definition.Malformed", "definition.window"},
		{"window and fiscal year", `{"field":"giftCount","op":">","value":0,"window":{"from":"2026-01-01","to":"2026-02-01"},"fiscalYear":0}`, "Definition.Malformed", "definition.fiscalYear"},
		{"window backwards", `{"field":"giftCount","op":">","value":0,"window":{"from":"2026-02-01","to":"2026-01-01"}}`, "Definition.InvalidValue", "definition.window.to"},
		{"window bad from", `{"field":"giftCount","op":">","value":0,"window":{"from":"x","to":"2026-01-01"}}`, "Definition.InvalidValue", "definition.window.from"},
		{"window extra", `{"field":"giftCount","op":">","value":0,"window":{"from":"2026-01-01","to":"2026-01-02","at":1}}`, "Definition.Malformed", "definition.window.at"},
		{"future fiscal year", `{"field":"giftCount","op":">","value":0,"fiscalYear":1}`, "Definition.InvalidValue", "definition.fiscalYear"},
		{"bad fund", `{"field":"totalGiven","op":">","value":1,"fundIds":["nope"]}`, "Definition.InvalidValue", "definition.fundIds[0]"},
		{"frequency elsewhere", `{"field":"giftCount","op":">","value":0,"frequency":"monthly"}`, "Definition.Malformed", "definition.frequency"},
		{"bad frequency", `{"field":"hasActiveRecurring","op":"=","value":true,"frequency":"daily"}`, "Definition.InvalidValue", "definition.frequency"},
		{"bad cohort id", `{"all":[{"cohort":"not-a-cohort"}]}`, "Definition.UnknownCohort", "definition.all[0].cohort"},
		{"cohort extra", `{"cohort":"lybunt","x":1}`, "Definition.Malformed", "definition"},
		{"too deep", deep, "Definition.TooDeep", "definition" + strings.Repeat(".not", MaxDepth)},
		{"too many", `{"all":[` + strings.Join(many, ",") + `]}`, "Definition.TooManyConditions", fmt.Sprintf("definition.all[%d]", MaxConditions)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.def))
			code, path := refusal(t, err)
			if code != c.code || path != c.path {
				t.Fatalf("got %s at %s, want %s at %s", code, path, c.code, c.path)
			}
		})
	}
}

func calendar(t *testing.T) Calendar {
	t.Helper()
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	return NewCalendar(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), loc, time.July, "1000")
}

// TestCompileOperators compiles every operator of every field: the SQL
// holds placeholders only, the values are in Args.
func TestCompileOperators(t *testing.T) {
	values := map[fieldKind]map[string]string{
		kindEnum:   {"=": `"Individual"`, "!=": `"Individual"`, "in": `["Individual","Organization"]`, "isNull": "true"},
		kindTags:   {"=": `"Gala'; DROP TABLE x;--"`, "!=": `"gala"`, "contains": `"gala"`, "in": `["a","B"]`, "isNull": "false"},
		kindText:   {"=": `"XQ"`, "!=": `"XQ"`, "in": `["XQ","nj"]`, "contains": `"10%_"`, "isNull": "true"},
		kindDate:   {"=": `"2026-01-01"`, "!=": `"2026-01-01"`, "<": `"2026-01-01"`, "<=": `"2026-01-01"`, ">": `"2026-01-01"`, ">=": `"2026-01-01"`, "between": `["2025-01-01","2026-01-01"]`, "isNull": "true"},
		kindBool:   {"=": "true", "!=": "false"},
		kindAmount: {"=": "100", "!=": `"100.50"`, "<": "1", "<=": "1", ">": "1", ">=": "1", "between": `[1, "2.5"]`, "isNull": "false"},
		kindCount:  {"=": "1", "!=": "1", "<": "1", "<=": "1", ">": "1", ">=": "1", "between": "[1,3]"},
	}
	for _, name := range Fields() {
		f := fields[name]
		for _, op := range f.ops {
			t.Run(name+" "+op, func(t *testing.T) {
				v, ok := values[f.kind][op]
				if f.kind == kindEnum && name == "recurringStatus" {
					v = strings.ReplaceAll(strings.ReplaceAll(v, "Individual", "active"), "Organization", "paused")
				}
				if !ok {
					t.Fatalf("no test value for %s %s", name, op)
				}
				def := fmt.Sprintf(`{"field":%q,"op":%q,"value":%s}`, name, op, v)
				n, err := Parse([]byte(def))
				if err != nil {
					t.Fatal(err)
				}
				c := &Compiler{Tenant: uuid.New(), Currency: "USD", Calendar: calendar(t)}
				q, err := c.Compile(context.Background(), "", n)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(q.Where+q.With+q.Joins, "DROP") || strings.Contains(q.Where, "XQ") || strings.Contains(q.Where, "2026") {
					t.Fatalf("a value reached the SQL: %s", q.Where)
				}
				if name == "hasActiveRecurring" && op == "=" && v == "true" {
					// "= true" is the bare semi-join, no value to pass.
					if !strings.HasPrefix(strings.TrimPrefix(q.Where, "($2::text IS NOT NULL AND $3::text IS NOT NULL) AND "), "(c.contact_id IN (") {
						t.Fatalf("hasActiveRecurring = true: %s", q.Where)
					}
					return
				}
				if len(q.Args) < 4 {
					t.Fatalf("no value parameter: %v", q.Args)
				}
			})
		}
	}
}

func TestCompileReferencesAndCycles(t *testing.T) {
	a, b := uuid.NewString(), uuid.NewString()
	defs := map[string]string{
		a: `{"all":[{"cohort":"lybunt"},{"cohort":"` + b + `"}]}`,
		b: `{"any":[{"field":"tags","op":"=","value":"x"},{"cohort":"` + a + `"}]}`,
	}
	cal := calendar(t)
	c := &Compiler{Tenant: uuid.New(), Currency: "USD", Calendar: cal, Resolve: func(_ context.Context, id string) (*Node, error) {
		if IsBuiltin(id) {
			return Parse([]byte(builtinDefinition(id, cal)))
		}
		d, ok := defs[id]
		if !ok {
			return nil, apperr.NotFound("Cohort")
		}
		return Parse([]byte(d))
	}}
	n, _ := Parse([]byte(defs[a]))
	_, err := c.Compile(context.Background(), a, n)
	if code, path := refusal(t, err); code != "Definition.Cycle" || path != "definition.any[1].cohort" {
		t.Fatalf("got %s at %s", code, path)
	}
	n, _ = Parse([]byte(`{"not":{"cohort":"` + uuid.NewString() + `"}}`))
	_, err = c.Compile(context.Background(), "", n)
	if code, path := refusal(t, err); code != "Definition.UnknownCohort" || path != "definition.not.cohort" {
		t.Fatalf("got %s at %s", code, path)
	}
	for _, id := range BuiltinIDs() {
		n, err := Parse([]byte(builtinDefinition(id, cal)))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, err := c.Compile(context.Background(), id, n); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}

func TestFiscalYearAndWindows(t *testing.T) {
	cal := calendar(t) // 2026-12-02 in New York, fiscal year from July
	from, to := cal.FiscalYear(-1)
	if day(from) != "2025-07-01" || day(to) != "2026-07-01" {
		t.Fatalf("last fiscal year %s to %s", from, to)
	}
	jan := NewCalendar(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.UTC, time.January, "")
	if f, _ := jan.FiscalYear(0); day(f) != "2026-01-01" {
		t.Fatalf("this fiscal year starts %s", f)
	}
	cases := []struct {
		from, to   time.Time
		mFrom, mTo string
		edges      int
	}{
		{from, to, "2025-08-01", "2026-07-01", 2},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), "2026-01-01", "2027-01-01", 0},
		{time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 9, 0, 0, 0, 0, time.UTC), "2026-02-01", "2026-02-01", 1},
		{time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC), "2026-02-01", "2026-03-01", 2},
	}
	for _, c := range cases {
		mf, mt, edges := splitWindow(c.from, c.to)
		if day(mf) != c.mFrom || day(mt) != c.mTo || len(edges) != c.edges {
			t.Errorf("%s–%s: months %s–%s, %d edges", c.from, c.to, day(mf), day(mt), len(edges))
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"all":[{"field":"giftCount","op":">=","value":1,"fiscalYear":-1},{"not":{"cohort":"lybunt"}}]}`,
		`{"any":[{"field":"tags","op":"in","value":["a","b"]},{"field":"totalGiven","op":"between","value":[1,"2.5"],"window":{"from":"2026-01-01","to":"2026-12-31"}}]}`,
		`{"field":"hasActiveRecurring","op":"=","value":true,"frequency":"monthly"}`,
		`{"not":{"not":{"not":{}}}}`, `[]`, `null`, `{"field":1}`,
	} {
		f.Add([]byte(s))
	}
	cal := NewCalendar(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.UTC, time.January, "")
	f.Fuzz(func(t *testing.T, raw []byte) {
		n, err := Parse(raw)
		if err != nil {
			if e, ok := apperr.As(err); !ok || !strings.HasPrefix(e.Code, "Definition.") || !strings.HasPrefix(e.Violations[0].Field, "definition") {
				t.Fatalf("refusal is not a Definition problem: %v", err)
			}
			return
		}
		c := &Compiler{Tenant: uuid.New(), Currency: "USD", Calendar: cal, Resolve: func(context.Context, string) (*Node, error) {
			return nil, apperr.NotFound("Cohort")
		}}
		if _, err := c.Compile(context.Background(), "", n); err != nil {
			if e, ok := apperr.As(err); !ok || !strings.HasPrefix(e.Code, "Definition.") {
				t.Fatalf("compile failed outside the grammar's problems: %v", err)
			}
		}
	})
}

// TestGiversDriveTheQuery: a definition every member of which has given
// is driven by the lifetime rows; one a contact without gifts can meet is
// not. Lifetime dates become instant ranges, with no conversion per row.
func TestGiversDriveTheQuery(t *testing.T) {
	saved := uuid.NewString()
	for _, tc := range []struct {
		def    string
		givers bool
	}{
		{`{"field":"giftCount","op":">=","value":1}`, true},
		{`{"field":"giftCount","op":">","value":0}`, true},
		{`{"field":"giftCount","op":"=","value":0}`, false},
		{`{"field":"giftCount","op":"<=","value":3}`, false},
		{`{"field":"giftCount","op":"between","value":[0,3]}`, false},
		{`{"field":"giftCount","op":"between","value":[1,3]}`, true},
		{`{"field":"totalGiven","op":"<","value":"100"}`, false},
		{`{"field":"totalGiven","op":">=","value":"0.01","fiscalYear":-1}`, true},
		{`{"field":"totalGiven","op":"!=","value":"0"}`, true},
		{`{"field":"totalGiven","op":"!=","value":"5"}`, false},
		{`{"field":"lastGiftDate","op":"<","value":"2025-01-01"}`, true},
		{`{"field":"lastGiftDate","op":"!=","value":"2025-01-01"}`, false},
		{`{"field":"largestGift","op":"isNull","value":true}`, false},
		{`{"field":"largestGift","op":"isNull","value":false}`, true},
		{`{"field":"tags","op":"=","value":"gala"}`, false},
		{`{"all":[{"field":"tags","op":"=","value":"gala"},{"field":"giftCount","op":">=","value":1}]}`, true},
		{`{"any":[{"field":"tags","op":"=","value":"gala"},{"field":"giftCount","op":">=","value":1}]}`, false},
		{`{"any":[{"field":"firstGiftDate","op":">","value":"2026-01-01"},{"field":"giftCount","op":">=","value":1}]}`, true},
		{`{"not":{"field":"giftCount","op":"=","value":0}}`, false},
		{`{"cohort":"lybunt"}`, true},
		{`{"cohort":"monthly-donors"}`, false},
		{`{"cohort":"` + saved + `"}`, true},
	} {
		n, err := Parse([]byte(tc.def))
		if err != nil {
			t.Fatalf("%s: %v", tc.def, err)
		}
		cal := calendar(t)
		c := &Compiler{Tenant: uuid.New(), Currency: "USD", Calendar: cal, Resolve: func(_ context.Context, id string) (*Node, error) {
			if id == saved {
				return Parse([]byte(`{"field":"giftCount","op":">=","value":2}`))
			}
			return Parse([]byte(builtinDefinition(id, cal)))
		}}
		q, err := c.Compile(context.Background(), "", n)
		if err != nil {
			t.Fatalf("%s: %v", tc.def, err)
		}
		if q.Givers != tc.givers {
			t.Errorf("%s: givers %v, want %v", tc.def, q.Givers, tc.givers)
		}
		if strings.Contains(q.Where, "AT TIME ZONE") && !strings.Contains(tc.def, "!=") {
			t.Errorf("%s: a date converted per row: %s", tc.def, q.Where)
		}
	}
}

// TestHoldersDriveTheQuery: a definition every member of which has a
// schedule (and that givers does not drive) is driven by the schedules.
func TestHoldersDriveTheQuery(t *testing.T) {
	for _, tc := range []struct {
		def     string
		holders bool
	}{
		{`{"cohort":"monthly-donors"}`, true},
		{`{"field":"hasActiveRecurring","op":"=","value":false}`, false},
		{`{"field":"hasActiveRecurring","op":"!=","value":false}`, true},
		{`{"field":"recurringStatus","op":"in","value":["paused","past_due"]}`, true},
		{`{"field":"recurringStatus","op":"!=","value":"active"}`, false},
		{`{"field":"recurringStatus","op":"isNull","value":false}`, true},
		{`{"any":[{"field":"recurringStatus","op":"=","value":"paused"},{"field":"tags","op":"=","value":"x"}]}`, false},
		{`{"all":[{"field":"recurringStatus","op":"=","value":"paused"},{"field":"tags","op":"=","value":"x"}]}`, true},
		{`{"all":[{"field":"recurringStatus","op":"=","value":"paused"},{"field":"giftCount","op":">=","value":1}]}`, false}, // givers
	} {
		n, err := Parse([]byte(tc.def))
		if err != nil {
			t.Fatalf("%s: %v", tc.def, err)
		}
		cal := calendar(t)
		c := &Compiler{Tenant: uuid.New(), Currency: "USD", Calendar: cal, Resolve: func(_ context.Context, id string) (*Node, error) {
			return Parse([]byte(builtinDefinition(id, cal)))
		}}
		q, err := c.Compile(context.Background(), "", n)
		if err != nil {
			t.Fatalf("%s: %v", tc.def, err)
		}
		if q.Holders != tc.holders {
			t.Errorf("%s: holders %v, want %v", tc.def, q.Holders, tc.holders)
		}
	}
}
