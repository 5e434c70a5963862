package cohorts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/money"
)

// Resolver loads a referenced cohort's definition (a built-in's or a
// saved one's); a cohort that is not the tenant's is db.ErrNotFound.
type Resolver func(ctx context.Context, id string) (*Node, error)

// Query is a compiled definition: common table expressions, the joins
// they need from the contacts view `c`, and the predicate over them. Every
// value is a parameter in Args; $1 is the tenant, $2 the currency, $3 the
// time zone's name.
type Query struct {
	With  string
	Joins string
	Where string
	Args  []any
	// Givers: every member has given in the tenant's currency, so the
	// query is driven by the lifetime rows (lg), not every contact
	// (docs/cohorts.md, Design).
	Givers bool
	// Holders: every member has a recurring schedule, so the query is
	// driven by the schedules' contacts (when not Givers).
	Holders bool
	// Contact: the predicate reads the contact's own fields (the
	// contacts view c), not only its id.
	Contact bool
}

// Compiler compiles definitions for one tenant.
type Compiler struct {
	Tenant   uuid.UUID
	Currency string
	Calendar Calendar
	Resolve  Resolver

	args    []any
	ctes    []string
	joins   []string
	windows map[string]string
	// recent are the window aliases read from the lifetime rows' recent
	// figures (recentSource).
	recent map[string]bool
	// periods are the window aliases read from orders' period rows
	// (periodSource), true once a condition reads more than their net
	// and count (which their primary key covers).
	periods map[string]bool
	// stack holds the cohorts being expanded (cycle detection).
	stack []string
	// expansions bounds the work of references (a diamond of references
	// expands more than once).
	expansions int
	// giversMode and contact become Query.Givers and Query.Contact.
	giversMode, contact bool
}

// maxExpansions bounds the cohorts one compilation expands.
const maxExpansions = 100

// nilFund is the fund_id of a month's all-funds summary row.
var nilFund = uuid.Nil

// Compile compiles n (the definition of cohort self, "" for none).
func (c *Compiler) Compile(ctx context.Context, self string, n *Node) (Query, error) {
	c.args = []any{c.Tenant, c.Currency, c.Calendar.Location.String()}
	c.ctes, c.joins, c.windows, c.recent, c.periods = nil, nil, map[string]string{}, map[string]bool{}, map[string]bool{}
	c.stack, c.expansions, c.contact = nil, 0, false
	if self != "" {
		c.stack = append(c.stack, self)
	}
	c.giversMode = c.givers(ctx, n, append([]string(nil), c.stack...))
	holders := !c.giversMode && c.holders(ctx, n, append([]string(nil), c.stack...))
	where, err := c.node(ctx, n)
	if err != nil {
		return Query{}, err
	}
	// The currency and zone are parameters of every query, used or not:
	// naming them gives an unused one its type.
	where = "($2::text IS NOT NULL AND $3::text IS NOT NULL) AND " + where
	q := Query{Where: where, Args: c.args, Joins: strings.Join(c.joins, "\n"), Givers: c.giversMode, Holders: holders, Contact: c.contact}
	if len(c.ctes) > 0 {
		q.With = "WITH " + c.periodColumns(strings.Join(c.ctes, ",\n"))
	}
	return q, nil
}

func (c *Compiler) arg(v any) string {
	c.args = append(c.args, v)
	return fmt.Sprintf("$%d", len(c.args))
}

func (c *Compiler) node(ctx context.Context, n *Node) (string, error) {
	switch n.Kind {
	case KindAll, KindAny:
		parts := make([]string, 0, len(n.Children))
		for _, ch := range n.Children {
			s, err := c.node(ctx, ch)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		sep := " AND "
		if n.Kind == KindAny {
			sep = " OR "
		}
		return "(" + strings.Join(parts, sep) + ")", nil
	case KindNot:
		s, err := c.node(ctx, n.Children[0])
		if err != nil {
			return "", err
		}
		return "(NOT " + s + ")", nil
	case KindCohort:
		return c.reference(ctx, n)
	}
	return c.condition(n.Cond, n.Path)
}

// reference expands another cohort inline, refusing a cycle.
func (c *Compiler) reference(ctx context.Context, n *Node) (string, error) {
	for _, s := range c.stack {
		if s == n.Cohort {
			return "", problem("Cycle", n.Path+".cohort", "Cohort %s refers back to itself (%s → %s).", n.Cohort, strings.Join(c.stack, " → "), n.Cohort)
		}
	}
	c.expansions++
	if c.expansions > maxExpansions || len(c.stack) >= MaxDepth {
		return "", problem("TooDeep", n.Path+".cohort", "Cohort references nest at most %d deep.", MaxDepth)
	}
	ref, err := c.Resolve(ctx, n.Cohort)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		return "", problem("UnknownCohort", n.Path+".cohort", "The tenant has no cohort %s.", n.Cohort)
	}
	if err != nil {
		return "", err
	}
	c.stack = append(c.stack, n.Cohort)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	return c.node(ctx, ref)
}

// condition compiles one condition; its result is never NULL (a
// comparison with a missing figure is false), so not/any/all are
// two-valued.
func (c *Compiler) condition(cond *Condition, path string) (string, error) {
	f := fields[cond.Field]
	if f.giving {
		return c.giving(cond, path)
	}
	var s string
	switch cond.Field {
	case "hasActiveRecurring", "recurringStatus":
	default:
		c.contact = true
	}
	switch cond.Field {
	case "contactType":
		s = c.compare("c.contact_type", cond.Op, cond.Value, "text")
	case "tags":
		s = c.tags(cond)
	case "address.state":
		s = c.text("c.state_province", cond)
	case "address.postalCode":
		s = c.text("c.postal_code", cond)
	case "createdAt":
		// created_at is never null: the comparison is two-valued.
		return c.dates("c.created_at", cond.Op, cond.Value), nil
	case "doNotEmail":
		s = c.compare("c.do_not_email", cond.Op, cond.Value, "boolean")
	case "hasActiveRecurring":
		if cond.Op == "=" && cond.Value == true {
			// Two-valued (contact ids are never null), and left bare so
			// that the planner can drive from the schedules (a semi-join).
			return c.recurring(cond), nil
		}
		s = c.recurring(cond)
	case "recurringStatus":
		s = c.recurringStatus(cond)
	default:
		return "", problem("UnknownField", path+".field", "Unknown field %q.", cond.Field)
	}
	return "coalesce(" + s + ", false)", nil
}

// compare is expr op value for the scalar operators, in and between.
func (c *Compiler) compare(expr, op string, v any, typ string) string {
	switch op {
	case "in":
		return fmt.Sprintf("(%s = ANY(%s::%s[]))", expr, c.arg(listOf(v, typ)), typ)
	case "between":
		p := v.([]any)
		return fmt.Sprintf("(%s BETWEEN %s::%s AND %s::%s)", expr, c.arg(p[0]), typ, c.arg(p[1]), typ)
	case "!=":
		// A contact without the figure (no state, no gift) differs.
		return fmt.Sprintf("(%s IS DISTINCT FROM %s::%s)", expr, c.arg(v), typ)
	}
	return fmt.Sprintf("(%s %s %s::%s)", expr, op, c.arg(v), typ)
}

// listOf makes an in-list a typed Go slice for pgx.
func listOf(v any, typ string) any {
	items := v.([]any)
	switch typ {
	case "bigint":
		out := make([]int64, len(items))
		for i, x := range items {
			out[i] = x.(int64)
		}
		return out
	}
	out := make([]string, len(items))
	for i, x := range items {
		out[i] = fmt.Sprint(x)
	}
	return out
}

func (c *Compiler) tags(cond *Condition) string {
	switch cond.Op {
	case "isNull":
		return fmt.Sprintf("((cardinality(c.tag_keys) = 0) = %s::boolean)", c.arg(cond.Value))
	case "in":
		items := cond.Value.([]any)
		keys := make([]string, len(items))
		for i, x := range items {
			keys[i] = strings.ToLower(x.(string))
		}
		return fmt.Sprintf("(c.tag_keys && %s::text[])", c.arg(keys))
	case "!=":
		return fmt.Sprintf("(NOT c.tag_keys @> ARRAY[lower(%s::text)])", c.arg(cond.Value))
	}
	return fmt.Sprintf("(c.tag_keys @> ARRAY[lower(%s::text)])", c.arg(cond.Value))
}

// text compares a text column ignoring case.
func (c *Compiler) text(col string, cond *Condition) string {
	switch cond.Op {
	case "isNull":
		return fmt.Sprintf("((coalesce(%s, '') = '') = %s::boolean)", col, c.arg(cond.Value))
	case "in":
		items := cond.Value.([]any)
		vals := make([]string, len(items))
		for i, x := range items {
			vals[i] = strings.ToLower(x.(string))
		}
		return fmt.Sprintf("(lower(%s) = ANY(%s::text[]))", col, c.arg(vals))
	case "contains":
		return fmt.Sprintf("(strpos(lower(%s), lower(%s::text)) > 0)", col, c.arg(cond.Value))
	case "!=":
		return fmt.Sprintf("(lower(%s) IS DISTINCT FROM lower(%s::text))", col, c.arg(cond.Value))
	}
	return fmt.Sprintf("(lower(%s) = lower(%s::text))", col, c.arg(cond.Value))
}

// recurring is whether the contact has an active schedule (of the
// frequency, when given). A hashed sub-plan over the tenant's schedules,
// not a probe per contact.
func (c *Compiler) recurring(cond *Condition) string {
	freq := ""
	if cond.Frequency != "" {
		freq = " AND s.frequency = " + c.arg(cond.Frequency) + "::text"
	}
	in := "(c.contact_id IN (SELECT s.contact_id FROM orders.report_schedules_v2 s WHERE s.tenant_id = $1 AND s.status = 'active'" + freq + "))"
	if cond.Op == "=" && cond.Value == true {
		return in
	}
	if cond.Op == "!=" {
		return fmt.Sprintf("(%s <> %s::boolean)", in, c.arg(cond.Value))
	}
	return fmt.Sprintf("(%s = %s::boolean)", in, c.arg(cond.Value))
}

func (c *Compiler) recurringStatus(cond *Condition) string {
	sub := "(c.contact_id IN (SELECT s.contact_id FROM orders.report_schedules_v2 s WHERE s.tenant_id = $1%s))"
	switch cond.Op {
	case "isNull":
		return fmt.Sprintf("(NOT %s = %s::boolean)", fmt.Sprintf(sub, ""), c.arg(cond.Value))
	case "in":
		return fmt.Sprintf(sub, " AND s.status = ANY("+c.arg(listOf(cond.Value, "text"))+"::text[])")
	case "!=":
		return "(NOT " + fmt.Sprintf(sub, " AND s.status = "+c.arg(cond.Value)+"::text") + ")"
	}
	return fmt.Sprintf(sub, " AND s.status = "+c.arg(cond.Value)+"::text")
}

// giving compiles a giving condition over the lifetime summary or a
// window's aggregate.
func (c *Compiler) giving(cond *Condition, path string) (string, error) {
	alias, err := c.source(cond, path)
	if err != nil {
		return "", err
	}
	// The driving lifetime rows are never missing, nor any of their
	// figures: a comparison of them is two-valued, and left bare so that
	// an index on them serves it.
	wrap := func(s string) string { return "coalesce(" + s + ", false)" }
	if alias == "lg" && c.giversMode {
		wrap = func(s string) string { return s }
	}
	if cond.Op == "isNull" {
		return wrap(fmt.Sprintf("((%s.cnt IS NULL) = %s::boolean)", alias, c.arg(cond.Value))), nil
	}
	if _, ok := c.periods[alias]; ok && cond.Op != "isNull" && cond.Field != "totalGiven" && cond.Field != "giftCount" {
		c.periods[alias] = true
	}
	var expr, typ string
	switch cond.Field {
	case "totalGiven":
		expr, typ = "coalesce("+alias+".net, 0)", "bigint"
	case "giftCount":
		expr, typ = "coalesce("+alias+".cnt, 0)", "bigint"
	case "largestGift":
		expr, typ = alias+".largest", "bigint"
	case "firstGiftDate":
		return wrap(c.dates(alias+".first_at", cond.Op, cond.Value)), nil
	default:
		return wrap(c.dates(alias+".last_at", cond.Op, cond.Value)), nil
	}
	v, err := c.givingValue(cond, typ, path)
	if err != nil {
		return "", err
	}
	out := wrap(c.compare(expr, cond.Op, v, typ))
	if c.recent[alias] && cond.Field == "totalGiven" {
		out = recentBound(cond.Op, v, c.arg) + out
	}
	return out, nil
}

// recentBound is, for a lower bound on a recent window's net, the same
// bound on the lifetime row's recent net ("lg.recent_minor >= v AND "):
// the window's net is never more (it is recent less gifts), and the
// bound is a range of the index contact_giving_recent, so the donors who
// could qualify are read, not every donor.
func recentBound(op string, v any, arg func(any) string) string {
	switch op {
	case ">=", ">", "=":
		return "lg.recent_minor >= " + arg(v) + "::bigint AND "
	case "between":
		return "lg.recent_minor >= " + arg(v.([]any)[0]) + "::bigint AND "
	}
	return ""
}

// dates compares a timestamp column with a date of the tenant's calendar
// as instants — the local midnights that bound the date — so that an
// index on the column serves it; != (a missing figure differs) stays a
// comparison of dates.
func (c *Compiler) dates(col, op string, v any) string {
	midnight := func(x any) time.Time {
		t, _ := c.Calendar.Date(fmt.Sprint(x)) // the grammar checked it
		return t
	}
	after := func(x any) time.Time { return midnight(x).AddDate(0, 0, 1) }
	switch op {
	case "=":
		return fmt.Sprintf("(%s >= %s AND %s < %s)", col, c.arg(midnight(v)), col, c.arg(after(v)))
	case "<":
		return fmt.Sprintf("(%s < %s)", col, c.arg(midnight(v)))
	case "<=":
		return fmt.Sprintf("(%s < %s)", col, c.arg(after(v)))
	case ">":
		return fmt.Sprintf("(%s >= %s)", col, c.arg(after(v)))
	case ">=":
		return fmt.Sprintf("(%s >= %s)", col, c.arg(midnight(v)))
	case "between":
		p := v.([]any)
		return fmt.Sprintf("(%s >= %s AND %s < %s)", col, c.arg(midnight(p[0])), col, c.arg(after(p[1])))
	}
	return c.compare("("+col+" AT TIME ZONE $3)::date", op, v, "date")
}

// givingValue turns amounts into minor units of the tenant's currency and
// counts into int64.
func (c *Compiler) givingValue(cond *Condition, typ, path string) (any, error) {
	conv := func(x any) (any, error) {
		switch cond.Field {
		case "totalGiven", "largestGift":
			m, err := money.ParseMinor(x.(string), c.Currency)
			if err != nil {
				return nil, problem("InvalidValue", path+".value", "The amount has more decimals than %s allows.", c.Currency)
			}
			return m, nil
		case "giftCount":
			return int64(x.(int)), nil
		}
		return x, nil
	}
	if list, ok := cond.Value.([]any); ok {
		out := make([]any, len(list))
		for i, x := range list {
			v, err := conv(x)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	_ = typ
	return conv(cond.Value)
}

// source returns the alias of the figures a giving condition reads: the
// lifetime summary, or one aggregate per distinct window and funds
// (conditions that share them share it).
func (c *Compiler) source(cond *Condition, path string) (string, error) {
	if cond.Window == nil && cond.FiscalYear == nil && len(cond.FundIDs) == 0 {
		if c.giversMode {
			return "lg", nil // the driving rows themselves
		}
		if _, ok := c.windows["lifetime"]; !ok {
			c.windows["lifetime"] = "lg"
			c.joins = append(c.joins, `LEFT JOIN (SELECT contact_id, net_minor AS net, gift_count AS cnt, largest_minor AS largest, first_at, last_at
    FROM orders.report_contact_giving_v1 WHERE tenant_id = $1 AND currency = $2) lg ON lg.contact_id = c.contact_id`)
		}
		return "lg", nil
	}
	from, to, err := c.bounds(cond, path)
	if err != nil {
		return "", err
	}
	if c.recentServes(cond, from, to) {
		return c.recentSource(from, to), nil
	}
	if len(cond.FundIDs) == 0 {
		if kind, start, ok := c.periodOf(from, to); ok {
			return c.periodSource(kind, start, from, to), nil
		}
	}
	key := fmt.Sprintf("%d|%d|%v", from.Unix(), to.Unix(), cond.FundIDs)
	if a, ok := c.windows[key]; ok {
		return a, nil
	}
	alias := fmt.Sprintf("w%d", len(c.windows)+1)
	c.windows[key] = alias
	c.ctes = append(c.ctes, alias+" AS ("+c.window(from, to, cond.FundIDs)+")")
	c.joins = append(c.joins, fmt.Sprintf("LEFT JOIN %s ON %s.contact_id = c.contact_id", alias, alias))
	return alias, nil
}

// maxRecentEdge is how far after the tenant's rolling window's start a
// window may start and still be read from the recent figures: the gifts
// between the two are read one by one.
const maxRecentEdge = 7 * 24 * time.Hour

// recentServes reports whether a giving condition's window [from, to) is
// read from the lifetime rows' recent figures (docs/cohorts.md, Rolling
// windows): a net or count over all funds, in a definition driven by the
// donors (the lifetime rows are the driving rows), starting at most
// maxRecentEdge after the tenant's rolling window and running to today
// or later — the major donors' last 12 months.
func (c *Compiler) recentServes(cond *Condition, from, to time.Time) bool {
	start := c.Calendar.RollingFrom
	if !c.giversMode || len(cond.FundIDs) > 0 || start.IsZero() {
		return false
	}
	switch {
	case cond.Op == "isNull", cond.Field == "totalGiven", cond.Field == "giftCount":
	default:
		return false // largest, first and last cannot be subtracted
	}
	return !from.Before(start) && from.Sub(start) <= maxRecentEdge && !to.Before(c.Calendar.Today)
}

// rollingFrom is the tenant's rolling window's start as the statement's
// snapshot holds it (infinity when the tenant has none: no recent gift).
const rollingFrom = `coalesce((SELECT from_at FROM orders.report_giving_rolling_v1 WHERE tenant_id = $1), 'infinity'::timestamptz)`

// recentSource is the window [from, to) as the driving lifetime row's
// recent figures corrected by the gifts where the two differ: those
// dated in the rolling window but not in [from, to) (before from, or at
// or after to) are taken off, those in [from, to) but before the rolling
// window (when it started later than the compiler read it) added. Only
// these gifts are read: a few days' worth.
func (c *Compiler) recentSource(from, to time.Time) string {
	key := fmt.Sprintf("recent|%d|%d", from.Unix(), to.Unix())
	if a, ok := c.windows[key]; ok {
		return a
	}
	alias := fmt.Sprintf("w%d", len(c.windows)+1)
	c.windows[key] = alias
	c.recent[alias] = true
	f, t := c.arg(from), c.arg(to)
	c.ctes = append(c.ctes, fmt.Sprintf(`%[1]se AS (SELECT contact_id, sum(d * donation_net_minor)::bigint AS n, sum(d)::bigint AS k
    FROM (SELECT contact_id, donation_net_minor,
                 (created_at >= %[2]s AND created_at < %[3]s)::int - (created_at >= %[4]s)::int AS d
          FROM orders.report_orders_v1
          WHERE tenant_id = $1 AND currency = $2 AND has_donations AND status IN ('Completed', 'PartiallyRefunded')
            AND donation_net_minor > 0
            AND ((created_at >= least(%[4]s, %[2]s) AND created_at < greatest(%[4]s, %[2]s)) OR created_at >= %[3]s)) x
    GROUP BY contact_id)`, alias, f, t, rollingFrom))
	c.joins = append(c.joins, fmt.Sprintf(`LEFT JOIN %[1]se ON %[1]se.contact_id = c.contact_id
CROSS JOIN LATERAL (SELECT lg.recent_minor + coalesce(%[1]se.n, 0) AS net, nullif(lg.recent_count + coalesce(%[1]se.k, 0), 0) AS cnt) %[1]s`, alias))
	return alias
}

// periodOf reports whether [from, to) is exactly one local period of the
// tenant's calendar that orders keeps rows for (00027): a month ("m"), a
// quarter of its fiscal year ("q") or a fiscal year ("y"), and its first
// day.
func (c *Compiler) periodOf(from, to time.Time) (string, string, bool) {
	loc := c.Calendar.Location
	f, t := from.In(loc), to.In(loc)
	first := func(x time.Time) bool { return x.Day() == 1 && x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 }
	if !first(f) || !first(t) {
		return "", "", false
	}
	months := (t.Year()-f.Year())*12 + int(t.Month()) - int(f.Month())
	into := (int(f.Month()) - int(c.Calendar.FiscalYearStartMonth) + 12) % 12
	kind := ""
	switch {
	case months == 1:
		kind = "m"
	case months == 3 && into%3 == 0:
		kind = "q"
	case months == 12 && into == 0:
		kind = "y"
	default:
		return "", "", false
	}
	return kind, f.Format(time.DateOnly), true
}

// periodSource is the window [from, to), one local period, as the
// contacts' rows of that period when orders keeps them in the calendar
// the compiler was given (its copy of the tenant's zone and fiscal year,
// compared by the statement in its own snapshot: docs/cohorts.md,
// "Local periods"), else as the month rows' aggregate: one row per
// donor of the period instead of an aggregate of its months.
func (c *Compiler) periodSource(kind, start string, from, to time.Time) string {
	key := fmt.Sprintf("period|%s|%s", kind, start)
	if a, ok := c.windows[key]; ok {
		return a
	}
	alias := fmt.Sprintf("w%d", len(c.windows)+1)
	c.windows[key] = alias
	c.periods[alias] = false
	kept := fmt.Sprintf(`EXISTS (SELECT 1 FROM orders.report_giving_rolling_v1 WHERE tenant_id = $1 AND time_zone = $3
            AND fiscal_year_start = %s::int)`, c.arg(int(c.Calendar.FiscalYearStartMonth)))
	c.ctes = append(c.ctes, fmt.Sprintf(`%s AS (SELECT {{columns %[1]s}}
        FROM orders.report_contact_giving_periods_v1
        WHERE tenant_id = $1 AND kind = %s::"char" AND period = %s::date AND currency = $2 AND %s
    UNION ALL
    SELECT * FROM (%s) m WHERE NOT %s)`, alias, c.arg(kind), c.arg(start), kept, c.window(from, to, nil), kept))
	c.joins = append(c.joins, fmt.Sprintf("LEFT JOIN %s ON %s.contact_id = c.contact_id", alias, alias))
	return alias
}

// periodColumns fills in each period alias's columns: all of them when
// a condition reads its largest gift or dates, else its net and count
// alone, which the period rows' primary key covers (an index-only scan
// of the period instead of a read of its rows).
func (c *Compiler) periodColumns(with string) string {
	for alias, full := range c.periods {
		cols := "contact_id, net_minor AS net, gift_count::bigint AS cnt, NULL::bigint AS largest, NULL::timestamptz AS first_at, NULL::timestamptz AS last_at"
		if full {
			cols = "contact_id, net_minor AS net, gift_count::bigint AS cnt, largest_minor AS largest, first_at, last_at"
		}
		with = strings.Replace(with, "{{columns "+alias+"}}", cols, 1)
	}
	return with
}

// bounds are a giving condition's window as instants [from, to).
func (c *Compiler) bounds(cond *Condition, path string) (time.Time, time.Time, error) {
	switch {
	case cond.FiscalYear != nil:
		f, t := c.Calendar.FiscalYear(*cond.FiscalYear)
		return f, t, nil
	case cond.Window != nil:
		f, err := c.Calendar.Date(cond.Window.From)
		if err != nil {
			return f, f, problem("InvalidValue", path+".window.from", "'from' must be a date, YYYY-MM-DD.")
		}
		t, err := c.Calendar.Date(cond.Window.To)
		if err != nil {
			return f, t, problem("InvalidValue", path+".window.to", "'to' must be a date, YYYY-MM-DD.")
		}
		return f, t.AddDate(0, 0, 1), nil
	}
	// Funds without a window: every gift.
	return time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), nil
}

// window aggregates each contact's gifts in [from, to): the UTC months
// the window covers whole from the month summaries, and the gifts of its
// partial edges from the gift rows (docs/cohorts.md, Design).
func (c *Compiler) window(from, to time.Time, funds []uuid.UUID) string {
	mFrom, mTo, edges := splitWindow(from, to)
	var fundArg string
	if len(funds) > 0 {
		fundArg = c.arg(funds)
	} else {
		fundArg = c.arg([]uuid.UUID{nilFund})
	}
	months := fmt.Sprintf(`SELECT contact_id, net_minor AS n, gift_count AS k, largest_minor AS l, first_at AS f, last_at AS t
        FROM orders.report_contact_giving_months_v1
        WHERE tenant_id = $1 AND currency = $2 AND fund_id = ANY(%s::uuid[]) AND month >= %s::date AND month < %s::date`,
		fundArg, c.arg(mFrom.Format(time.DateOnly)), c.arg(mTo.Format(time.DateOnly)))
	var edgeSQL []string
	for _, e := range edges {
		edgeSQL = append(edgeSQL, fmt.Sprintf("(created_at >= %s AND created_at < %s)", c.arg(e[0]), c.arg(e[1])))
	}
	gifts := ""
	if len(edgeSQL) > 0 {
		cond := strings.Join(edgeSQL, " OR ")
		if len(funds) == 0 {
			gifts = fmt.Sprintf(`
        UNION ALL
        SELECT contact_id, donation_net_minor, 1, donation_net_minor, created_at, created_at
        FROM orders.report_orders_v1
        WHERE tenant_id = $1 AND currency = $2 AND has_donations AND status IN ('Completed', 'PartiallyRefunded')
          AND donation_net_minor > 0 AND (%s)`, cond)
		} else {
			gifts = fmt.Sprintf(`
        UNION ALL
        SELECT contact_id, sum(net_amount_minor), 1, sum(net_amount_minor), created_at, created_at
        FROM orders.report_donations_v1
        WHERE tenant_id = $1 AND currency = $2 AND status IN ('Completed', 'PartiallyRefunded')
          AND fund_id = ANY(%s::uuid[]) AND (%s)
        GROUP BY order_id, contact_id, created_at HAVING sum(net_amount_minor) > 0`, fundArg, cond)
		}
	}
	return `SELECT contact_id, sum(n) AS net, sum(k) AS cnt, max(l) AS largest, min(f) AS first_at, max(t) AS last_at
    FROM (` + months + gifts + `) x GROUP BY contact_id`
}

// splitWindow splits [from, to) into the UTC months it covers whole,
// [mFrom, mTo), and up to two partial edges.
func splitWindow(from, to time.Time) (time.Time, time.Time, [][2]time.Time) {
	from, to = from.UTC(), to.UTC()
	mFrom := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if mFrom.Before(from) {
		mFrom = mFrom.AddDate(0, 1, 0)
	}
	mTo := time.Date(to.Year(), to.Month(), 1, 0, 0, 0, 0, time.UTC)
	if !mFrom.Before(mTo) {
		return mFrom, mFrom, [][2]time.Time{{from, to}}
	}
	var edges [][2]time.Time
	if from.Before(mFrom) {
		edges = append(edges, [2]time.Time{from, mFrom})
	}
	if mTo.Before(to) {
		edges = append(edges, [2]time.Time{mTo, to})
	}
	return mFrom, mTo, edges
}
