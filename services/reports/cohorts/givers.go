package cohorts

import (
	"context"
	"strings"
)

// givers reports whether every member of n has given in the tenant's
// currency: whether a contact without a lifetime row can never match.
// Such a definition is counted from the lifetime rows (the tenant's
// donors) instead of from every contact, and a condition on the lifetime
// figures becomes an index range (docs/cohorts.md, Design). A reference
// that cannot be resolved, or a cycle, answers false: the compilation
// that follows reports it.
func (c *Compiler) givers(ctx context.Context, n *Node, stack []string) bool {
	switch n.Kind {
	case KindAll:
		for _, ch := range n.Children {
			if c.givers(ctx, ch, stack) {
				return true
			}
		}
		return false
	case KindAny:
		for _, ch := range n.Children {
			if !c.givers(ctx, ch, stack) {
				return false
			}
		}
		return len(n.Children) > 0
	case KindNot:
		return false
	case KindCohort:
		if len(stack) >= MaxDepth || contains(stack, n.Cohort) {
			return false
		}
		ref, err := c.Resolve(ctx, n.Cohort)
		if err != nil {
			return false
		}
		return c.givers(ctx, ref, append(stack, n.Cohort))
	}
	f, ok := fields[n.Cond.Field]
	return ok && f.giving && !trueWithoutGifts(n.Cond)
}

// holders reports whether every member of n has a recurring schedule
// (of any status): such a definition is driven by the schedules' contacts
// (monthly donors: tens of thousands of a million), as givers is by the
// donors.
func (c *Compiler) holders(ctx context.Context, n *Node, stack []string) bool {
	switch n.Kind {
	case KindAll:
		for _, ch := range n.Children {
			if c.holders(ctx, ch, stack) {
				return true
			}
		}
		return false
	case KindAny:
		for _, ch := range n.Children {
			if !c.holders(ctx, ch, stack) {
				return false
			}
		}
		return len(n.Children) > 0
	case KindNot:
		return false
	case KindCohort:
		if len(stack) >= MaxDepth || contains(stack, n.Cohort) {
			return false
		}
		ref, err := c.Resolve(ctx, n.Cohort)
		if err != nil {
			return false
		}
		return c.holders(ctx, ref, append(stack, n.Cohort))
	}
	b, _ := n.Cond.Value.(bool)
	switch n.Cond.Field {
	case "hasActiveRecurring":
		return (n.Cond.Op == "=") == b
	case "recurringStatus":
		return n.Cond.Op == "=" || n.Cond.Op == "in" || (n.Cond.Op == "isNull" && !b)
	}
	return false
}

// trueWithoutGifts reports whether a giving condition holds for a contact
// with no gift: its total and count read 0, its largest gift and dates
// are missing (only != and isNull true hold for a missing figure).
func trueWithoutGifts(cond *Condition) bool {
	if cond.Op == "isNull" {
		b, _ := cond.Value.(bool)
		return b
	}
	switch cond.Field {
	case "totalGiven", "giftCount":
		return zeroMatches(cond.Op, cond.Value)
	}
	return cond.Op == "!="
}

// zeroMatches evaluates 0 op value for a count (an int) or an amount (a
// non-negative decimal string, as the grammar leaves it).
func zeroMatches(op string, v any) bool {
	positive := func(x any) bool {
		switch x := x.(type) {
		case int:
			return x > 0
		case int64:
			return x > 0
		case string:
			return strings.Trim(x, "0.") != ""
		}
		return false
	}
	if op == "between" {
		p, _ := v.([]any)
		return len(p) != 2 || !positive(p[0])
	}
	// The values are never negative: 0 < v and 0 != v when v is positive.
	switch op {
	case "<=":
		return true
	case "=", ">=":
		return !positive(v)
	case "!=", "<":
		return positive(v)
	case ">":
		return false
	}
	return true
}
