// Package cohorts is the reports service's cohorts (issue 34,
// docs/cohorts.md): saved segment definitions in a closed JSON grammar,
// the built-in cohorts, and their members and counts, computed from
// current data at every read by compiling a definition to one
// parameterized SQL query over the views contacts and orders publish.
package cohorts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
)

// Limits of a definition.
const (
	// MaxDepth is the deepest nesting of all/any/not a definition may
	// have; a condition at the top is depth 1.
	MaxDepth = 8
	// MaxConditions is the most conditions (and cohort references) a
	// definition may hold.
	MaxConditions = 50
	// maxInValues bounds an `in` list.
	maxInValues = 500
	// maxText bounds a text value.
	maxText = 200
)

// Kind is a node's kind.
type Kind int

// The node kinds.
const (
	KindAll Kind = iota
	KindAny
	KindNot
	KindCondition
	KindCohort
)

// Node is a parsed definition node.
type Node struct {
	Kind     Kind
	Path     string
	Children []*Node
	Cond     *Condition
	Cohort   string
}

// Condition is one `{"field","op","value"}` test.
type Condition struct {
	Field string
	Op    string
	// Value is the value as given, checked: a string, float64, bool, or
	// a []any of those (in, between).
	Value any
	// Window and FiscalYear bound a giving field (at most one of them);
	// FundIDs keeps gifts to those funds.
	Window     *Window
	FiscalYear *int
	FundIDs    []uuid.UUID
	// Frequency narrows hasActiveRecurring to schedules of that frequency.
	Frequency string
}

// Window is a giving condition's window: dates YYYY-MM-DD, inclusive, in
// the tenant's time zone.
type Window struct {
	From, To string
}

// fieldKind says what a field's values are.
type fieldKind int

const (
	kindEnum fieldKind = iota
	kindTags
	kindText
	kindDate
	kindBool
	kindAmount
	kindCount
)

// field is one field of the grammar.
type field struct {
	kind   fieldKind
	ops    []string
	enum   []string
	giving bool
}

var (
	compareOps = []string{"=", "!=", "<", "<=", ">", ">=", "between"}
	fields     = map[string]field{
		"contactType":        {kind: kindEnum, ops: []string{"=", "!=", "in"}, enum: []string{"Individual", "Organization"}},
		"tags":               {kind: kindTags, ops: []string{"=", "!=", "contains", "in", "isNull"}},
		"address.state":      {kind: kindText, ops: []string{"=", "!=", "in", "contains", "isNull"}},
		"address.postalCode": {kind: kindText, ops: []string{"=", "!=", "in", "contains", "isNull"}},
		"createdAt":          {kind: kindDate, ops: compareOps},
		"doNotEmail":         {kind: kindBool, ops: []string{"=", "!="}},
		"totalGiven":         {kind: kindAmount, ops: compareOps, giving: true},
		"giftCount":          {kind: kindCount, ops: compareOps, giving: true},
		"largestGift":        {kind: kindAmount, ops: append(append([]string{}, compareOps...), "isNull"), giving: true},
		"firstGiftDate":      {kind: kindDate, ops: append(append([]string{}, compareOps...), "isNull"), giving: true},
		"lastGiftDate":       {kind: kindDate, ops: append(append([]string{}, compareOps...), "isNull"), giving: true},
		"hasActiveRecurring": {kind: kindBool, ops: []string{"=", "!="}},
		"recurringStatus": {kind: kindEnum, ops: []string{"=", "!=", "in", "isNull"},
			enum: []string{"active", "paused", "past_due", "cancelled", "completed"}},
	}
	allOps      = []string{"=", "!=", "<", "<=", ">", ">=", "in", "contains", "between", "isNull"}
	frequencies = []string{"weekly", "monthly", "quarterly", "annually"}
	amountRE    = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,4})?$`)
)

// Fields returns the grammar's field names, sorted (docs, tests).
func Fields() []string {
	out := make([]string, 0, len(fields))
	for k := range fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// problem is a refusal of one node.
func problem(code, path, format string, a ...any) error {
	return apperr.FieldRule("Definition."+code, path, fmt.Sprintf(format, a...))
}

// Parse reads a definition from JSON and checks it against the grammar:
// the path of the first bad node is named in the 400 it answers
// (`definition.all[2].op`). Cohort references are not resolved here
// (Resolve does).
func Parse(raw []byte) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, problem("Malformed", "definition", "The definition must be a JSON object.")
	}
	if dec.More() {
		return nil, problem("Malformed", "definition", "The definition must be one JSON object.")
	}
	p := parser{}
	n, err := p.node(v, "definition", 1)
	if err != nil {
		return nil, err
	}
	return n, nil
}

type parser struct {
	conditions int
}

// node reads one node at depth.
func (p *parser) node(v any, path string, depth int) (*Node, error) {
	if depth > MaxDepth {
		return nil, problem("TooDeep", path, "A definition nests at most %d levels.", MaxDepth)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, problem("Malformed", path, "Each node must be a JSON object.")
	}
	for _, k := range []string{"all", "any"} {
		if c, ok := m[k]; ok {
			return p.group(m, k, c, path, depth)
		}
	}
	if c, ok := m["not"]; ok {
		if len(m) != 1 {
			return nil, problem("Malformed", path, "A 'not' node has no other property.")
		}
		child, err := p.node(c, path+".not", depth+1)
		if err != nil {
			return nil, err
		}
		return &Node{Kind: KindNot, Path: path, Children: []*Node{child}}, nil
	}
	if c, ok := m["cohort"]; ok {
		return p.reference(m, c, path)
	}
	if _, ok := m["field"]; ok {
		return p.condition(m, path)
	}
	return nil, problem("Malformed", path, "A node is {\"all\":[…]}, {\"any\":[…]}, {\"not\":{…}}, {\"cohort\":\"<id>\"} or a condition {\"field\",\"op\",\"value\"}.")
}

func (p *parser) group(m map[string]any, k string, c any, path string, depth int) (*Node, error) {
	if len(m) != 1 {
		return nil, problem("Malformed", path, "An '%s' node has no other property.", k)
	}
	list, ok := c.([]any)
	if !ok || len(list) == 0 {
		return nil, problem("Malformed", path+"."+k, "'%s' must be a non-empty array of nodes.", k)
	}
	n := &Node{Kind: KindAll, Path: path}
	if k == "any" {
		n.Kind = KindAny
	}
	for i, item := range list {
		child, err := p.node(item, fmt.Sprintf("%s.%s[%d]", path, k, i), depth+1)
		if err != nil {
			return nil, err
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}

func (p *parser) count(path string) error {
	p.conditions++
	if p.conditions > MaxConditions {
		return problem("TooManyConditions", path, "A definition holds at most %d conditions.", MaxConditions)
	}
	return nil
}

func (p *parser) reference(m map[string]any, c any, path string) (*Node, error) {
	if len(m) != 1 {
		return nil, problem("Malformed", path, "A 'cohort' node has no other property.")
	}
	if err := p.count(path); err != nil {
		return nil, err
	}
	id, ok := c.(string)
	if !ok || !validCohortID(id) {
		return nil, problem("UnknownCohort", path+".cohort", "'cohort' must be the id of a cohort: a built-in's name or a saved cohort's id.")
	}
	return &Node{Kind: KindCohort, Path: path, Cohort: id}, nil
}

// validCohortID is a built-in's name or a uuid.
func validCohortID(id string) bool {
	if _, ok := builtins[id]; ok {
		return true
	}
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}

var conditionKeys = map[string]bool{"field": true, "op": true, "value": true, "window": true, "fiscalYear": true, "fundIds": true, "frequency": true}

func (p *parser) condition(m map[string]any, path string) (*Node, error) {
	if err := p.count(path); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !conditionKeys[k] {
			return nil, problem("Malformed", path+"."+k, "'%s' is not a property of a condition.", k)
		}
	}
	name, _ := m["field"].(string)
	f, ok := fields[name]
	if !ok {
		return nil, problem("UnknownField", path+".field", "'field' must be one of: %s.", strings.Join(Fields(), ", "))
	}
	op, _ := m["op"].(string)
	if !contains(allOps, op) {
		return nil, problem("InvalidOperator", path+".op", "'op' must be one of: %s.", strings.Join(allOps, ", "))
	}
	if !contains(f.ops, op) {
		return nil, problem("InvalidOperator", path+".op", "'%s' takes the operators %s.", name, strings.Join(f.ops, ", "))
	}
	c := &Condition{Field: name, Op: op}
	raw, ok := m["value"]
	if !ok {
		return nil, problem("InvalidValue", path+".value", "A condition needs a 'value'.")
	}
	v, err := checkValue(f, op, raw, path+".value")
	if err != nil {
		return nil, err
	}
	c.Value = v
	if err := extras(f, name, m, c, path); err != nil {
		return nil, err
	}
	return &Node{Kind: KindCondition, Path: path, Cond: c}, nil
}

// extras reads window, fiscalYear, fundIds (giving fields) and frequency
// (hasActiveRecurring).
func extras(f field, name string, m map[string]any, c *Condition, path string) error {
	for _, k := range []string{"window", "fiscalYear", "fundIds"} {
		if _, ok := m[k]; ok && !f.giving {
			return problem("Malformed", path+"."+k, "'%s' bounds a giving field only (totalGiven, giftCount, largestGift, firstGiftDate, lastGiftDate).", k)
		}
	}
	if _, ok := m["frequency"]; ok && name != "hasActiveRecurring" {
		return problem("Malformed", path+".frequency", "'frequency' narrows hasActiveRecurring only.")
	}
	if w, ok := m["window"]; ok {
		if _, both := m["fiscalYear"]; both {
			return problem("Malformed", path+".fiscalYear", "A condition has 'window' or 'fiscalYear', not both.")
		}
		win, err := readWindow(w, path+".window")
		if err != nil {
			return err
		}
		c.Window = win
	}
	if fy, ok := m["fiscalYear"]; ok {
		n, err := integer(fy)
		if err != nil || n > 0 || n < -50 {
			return problem("InvalidValue", path+".fiscalYear", "'fiscalYear' is 0 (this fiscal year), -1 (the last one), … down to -50.")
		}
		c.FiscalYear = &n
	}
	if ids, ok := m["fundIds"]; ok {
		list, ok := ids.([]any)
		if !ok || len(list) == 0 || len(list) > maxInValues {
			return problem("InvalidValue", path+".fundIds", "'fundIds' must be a non-empty array of fund ids.")
		}
		for i, x := range list {
			s, _ := x.(string)
			id, err := uuid.Parse(s)
			if err != nil || len(s) != 36 {
				return problem("InvalidValue", fmt.Sprintf("%s.fundIds[%d]", path, i), "'fundIds' must be fund ids.")
			}
			c.FundIDs = append(c.FundIDs, id)
		}
	}
	if fr, ok := m["frequency"]; ok {
		s, _ := fr.(string)
		if !contains(frequencies, s) {
			return problem("InvalidValue", path+".frequency", "'frequency' must be one of: %s.", strings.Join(frequencies, ", "))
		}
		c.Frequency = s
	}
	return nil
}

func readWindow(w any, path string) (*Window, error) {
	m, ok := w.(map[string]any)
	if !ok {
		return nil, problem("InvalidValue", path, "'window' must be {\"from\":\"YYYY-MM-DD\",\"to\":\"YYYY-MM-DD\"}.")
	}
	for k := range m {
		if k != "from" && k != "to" {
			return nil, problem("Malformed", path+"."+k, "'%s' is not a property of a window.", k)
		}
	}
	from, ok1 := m["from"].(string)
	to, ok2 := m["to"].(string)
	if !ok1 || !isDate(from) {
		return nil, problem("InvalidValue", path+".from", "'from' must be a date, YYYY-MM-DD.")
	}
	if !ok2 || !isDate(to) {
		return nil, problem("InvalidValue", path+".to", "'to' must be a date, YYYY-MM-DD.")
	}
	if to < from {
		return nil, problem("InvalidValue", path+".to", "'to' must not be before 'from'.")
	}
	return &Window{From: from, To: to}, nil
}

// checkValue checks a value against the field and operator.
func checkValue(f field, op string, raw any, path string) (any, error) {
	switch op {
	case "isNull":
		b, ok := raw.(bool)
		if !ok {
			return nil, problem("InvalidValue", path, "'isNull' takes true or false.")
		}
		return b, nil
	case "in":
		list, ok := raw.([]any)
		if !ok || len(list) == 0 || len(list) > maxInValues {
			return nil, problem("InvalidValue", path, "'in' takes a non-empty array of at most %d values.", maxInValues)
		}
		out := make([]any, len(list))
		for i, x := range list {
			v, err := scalar(f, x, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case "between":
		list, ok := raw.([]any)
		if !ok || len(list) != 2 {
			return nil, problem("InvalidValue", path, "'between' takes [low, high].")
		}
		lo, err := scalar(f, list[0], path+"[0]")
		if err != nil {
			return nil, err
		}
		hi, err := scalar(f, list[1], path+"[1]")
		if err != nil {
			return nil, err
		}
		return []any{lo, hi}, nil
	}
	return scalar(f, raw, path)
}

// scalar checks one value of the field's kind. Amounts are decimal
// strings (a number is taken as its decimal text); counts whole numbers;
// dates YYYY-MM-DD.
func scalar(f field, raw any, path string) (any, error) {
	switch f.kind {
	case kindEnum:
		s, _ := raw.(string)
		if !contains(f.enum, s) {
			return nil, problem("InvalidValue", path, "The value must be one of: %s.", strings.Join(f.enum, ", "))
		}
		return s, nil
	case kindTags, kindText:
		s, ok := raw.(string)
		if !ok || s == "" || len(s) > maxText || strings.ContainsRune(s, 0) {
			return nil, problem("InvalidValue", path, "The value must be text of 1 to %d characters.", maxText)
		}
		return s, nil
	case kindDate:
		s, _ := raw.(string)
		if !isDate(s) {
			return nil, problem("InvalidValue", path, "The value must be a date, YYYY-MM-DD.")
		}
		return s, nil
	case kindBool:
		b, ok := raw.(bool)
		if !ok {
			return nil, problem("InvalidValue", path, "The value must be true or false.")
		}
		return b, nil
	case kindAmount:
		s := numberText(raw)
		if !amountRE.MatchString(s) {
			return nil, problem("InvalidValue", path, "The value must be an amount of at least 0, such as 1000 or 99.50.")
		}
		return s, nil
	default:
		n, err := integer(raw)
		if err != nil || n < 0 {
			return nil, problem("InvalidValue", path, "The value must be a whole number of at least 0.")
		}
		return n, nil
	}
}

func numberText(raw any) string {
	switch x := raw.(type) {
	case json.Number:
		return x.String()
	case string:
		return x
	}
	return ""
}

func integer(raw any) (int, error) {
	n, ok := raw.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	i, err := n.Int64()
	if err != nil || i > 1<<31-1 || i < -(1<<31) {
		return 0, fmt.Errorf("not a whole number")
	}
	return int(i), nil
}

func isDate(s string) bool {
	if len(s) != 10 {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// References returns the cohort ids the node refers to directly, with the
// path of each reference.
func (n *Node) References() map[string]string {
	out := map[string]string{}
	var walk func(*Node)
	walk = func(x *Node) {
		if x.Kind == KindCohort {
			if _, ok := out[x.Cohort]; !ok {
				out[x.Cohort] = x.Path
			}
		}
		for _, c := range x.Children {
			walk(c)
		}
	}
	walk(n)
	return out
}
