package cohorts

import (
	"context"
	"strings"
)

// givers reports whether every member of n has given in the tenant's
// currency: whether a contact without a lifetime row can never match.
// Such a definition is counted from the lifetime rows (the tenant's
// donors) instead of from every contact, and a condition on the lifetime
// figures becomes an index range (docs/cohorts.md, Design).
func (c *Compiler) givers(ctx context.Context, n *Node, stack []string) bool {
	return c.every(ctx, n, stack, func(cond *Condition) bool {
		f, ok := fields[cond.Field]
		return ok && f.giving && !trueWithoutGifts(cond)
	})
}

// holders reports whether every member of n has a recurring schedule
// (of any status): such a definition is driven by the schedules' contacts
// (monthly donors: tens of thousands of a million), as givers is by the
// donors.
func (c *Compiler) holders(ctx context.Context, n *Node, stack []string) bool {
	return c.every(ctx, n, stack, func(cond *Condition) bool {
		b, _ := cond.Value.(bool)
		switch cond.Field {
		case "hasActiveRecurring":
			return (cond.Op == "=") == b
		case "recurringStatus":
			return cond.Op == "=" || cond.Op == "in" || (cond.Op == "isNull" && !b)
		}
		return false
	})
}

// every reports whether every member of n meets what leaf says of a
// condition: one of an all's parts implies it, every branch of an any
// must, a not never does, a reference as its definition. A reference
// that cannot be resolved, or a cycle, answers false: the compilation
// that follows reports it.
func (c *Compiler) every(ctx context.Context, n *Node, stack []string, leaf func(*Condition) bool) bool {
	switch n.Kind {
	case KindAll:
		for _, ch := range n.Children {
			if c.every(ctx, ch, stack, leaf) {
				return true
			}
		}
		return false
	case KindAny:
		for _, ch := range n.Children {
			if !c.every(ctx, ch, stack, leaf) {
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
		return c.every(ctx, ref, append(stack, n.Cohort), leaf)
	}
	return leaf(n.Cond)
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
