package reports

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/almoner/almoner/pkg/apperr"
)

// Parameter types of the catalog.
const (
	ParamDate    = "Date"
	ParamInteger = "Integer"
	ParamString  = "String"
	ParamEnum    = "Enum"
	ParamUUID    = "Uuid"
)

// Param describes one parameter of a report type.
type Param struct {
	Key      string
	Type     string
	Required bool
	// Default returns the value used when the parameter is absent; nil for
	// none. Defaults that depend on the date take the run's clock.
	Default     func(now time.Time) string
	Allowed     []string
	Min, Max    int64
	Description string
}

// Values are a run's parsed parameters: time.Time for dates (UTC midnight),
// int64 for integers, string for strings, enums and UUIDs. An absent
// optional parameter without default is missing from the map.
type Values map[string]any

// Date returns a date parameter.
func (v Values) Date(k string) time.Time { t, _ := v[k].(time.Time); return t }

// Int returns an integer parameter.
func (v Values) Int(k string) int64 { n, _ := v[k].(int64); return n }

// Str returns a string parameter, "" when absent.
func (v Values) Str(k string) string { s, _ := v[k].(string); return s }

var maxParamLen = 200

var datePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// parseParam parses one raw parameter value, untrusted input from the
// request. It returns a message for the violation when the value does not
// fit the parameter.
func parseParam(p Param, raw string) (any, string) {
	if len(raw) > maxParamLen {
		return nil, fmt.Sprintf("'%s' must be %d characters or fewer.", p.Key, maxParamLen)
	}
	switch p.Type {
	case ParamDate:
		if !datePattern.MatchString(raw) {
			return nil, fmt.Sprintf("'%s' must be a date (YYYY-MM-DD).", p.Key)
		}
		t, err := time.Parse(time.DateOnly, raw)
		if err != nil || t.Year() < 1900 || t.Year() > 9998 {
			return nil, fmt.Sprintf("'%s' must be a date (YYYY-MM-DD).", p.Key)
		}
		return t, ""
	case ParamInteger:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Sprintf("'%s' must be an integer.", p.Key)
		}
		if n < p.Min || n > p.Max {
			return nil, fmt.Sprintf("'%s' must be between %d and %d.", p.Key, p.Min, p.Max)
		}
		return n, ""
	case ParamEnum:
		for _, a := range p.Allowed {
			if strings.EqualFold(a, raw) {
				return a, ""
			}
		}
		return nil, fmt.Sprintf("'%s' must be one of: %s.", p.Key, strings.Join(p.Allowed, ", "))
	case ParamUUID:
		id, err := uuid.Parse(raw)
		if err != nil || len(raw) != 36 {
			return nil, fmt.Sprintf("'%s' must be a UUID.", p.Key)
		}
		return id.String(), ""
	default:
		return raw, ""
	}
}

// rawParams turns a request's parameter object into strings: strings stay,
// integral numbers are written in decimal, null removes the key (so an
// override can clear a saved value). Other kinds are violations.
func rawParams(s *structpb.Struct, v *apperr.Violations) map[string]string {
	out := map[string]string{}
	for k, val := range s.GetFields() {
		path := "Parameters." + k
		switch x := val.GetKind().(type) {
		case *structpb.Value_StringValue:
			out[k] = x.StringValue
		case *structpb.Value_NumberValue:
			f := x.NumberValue
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				v.Add(path, "'%s' must be an integer or a string.", k)
				continue
			}
			out[k] = strconv.FormatInt(int64(f), 10)
		case *structpb.Value_NullValue, nil:
			out[k] = ""
		default:
			v.Add(path, "'%s' must be a string or a number.", k)
		}
	}
	return out
}

// resolve validates raw values against the type and fills defaults: the
// saved values, then the overrides on top (an empty override clears).
// Violations are keyed Parameters.<Key>.
func (t *Type) resolve(raw map[string]string, now time.Time) (Values, map[string]string, error) {
	var v apperr.Violations
	vals := Values{}
	clean := map[string]string{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if t.param(k) == nil {
			v.Add("Parameters."+k, "'%s' is not a parameter of report type %s.", k, t.Key)
		}
	}
	for _, p := range t.Params {
		s, ok := lookupFold(raw, p.Key)
		if !ok || s == "" {
			if p.Default != nil {
				s = p.Default(now)
			} else if p.Required {
				v.Add("Parameters."+p.Key, "'%s' must not be empty.", p.Key)
				continue
			} else {
				continue
			}
		} else {
			clean[p.Key] = s
		}
		val, msg := parseParam(p, s)
		if msg != "" {
			v.Add("Parameters."+p.Key, "%s", msg)
			continue
		}
		vals[p.Key] = val
	}
	if err := v.Err(); err != nil {
		return nil, nil, err
	}
	if t.check != nil {
		if err := t.check(vals); err != nil {
			return nil, nil, err
		}
	}
	return vals, clean, nil
}

// lookupFold finds key in m ignoring letter case, as request properties are
// matched everywhere else.
func lookupFold(m map[string]string, key string) (string, bool) {
	if s, ok := m[key]; ok {
		return s, true
	}
	for k, s := range m {
		if strings.EqualFold(k, key) {
			return s, true
		}
	}
	return "", false
}

// merge lays overrides over saved values; keys are matched ignoring case
// and take the override's spelling.
func merge(saved, overrides map[string]string) map[string]string {
	out := map[string]string{}
	for k, s := range saved {
		out[k] = s
	}
	for k, s := range overrides {
		for sk := range out {
			if strings.EqualFold(sk, k) {
				delete(out, sk)
			}
		}
		out[k] = s
	}
	return out
}
