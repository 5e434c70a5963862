// Package state is a shipment's state machine as a pure function: which
// action moves which status where, which repeats change nothing and which
// moves give stock back. The store reads and locks the shipment, asks
// Decide, and writes what it answers.
package state

import "fmt"

// The statuses of a shipment.
const (
	Pending   = "pending"
	Packed    = "packed"
	Shipped   = "shipped"
	Delivered = "delivered"
	Cancelled = "cancelled"
	Returned  = "returned"
)

// Action is a transition a client asks for.
type Action string

// The actions, each a POST on the shipment.
const (
	Pack    Action = "pack"
	Ship    Action = "ship"
	Deliver Action = "deliver"
	Cancel  Action = "cancel"
	Return  Action = "return"
)

// rule is one action's sources and target.
type rule struct {
	from []string
	to   string
}

var rules = map[Action]rule{
	Pack:    {from: []string{Pending}, to: Packed},
	Ship:    {from: []string{Pending, Packed}, to: Shipped},
	Deliver: {from: []string{Shipped}, to: Delivered},
	Cancel:  {from: []string{Pending, Packed}, to: Cancelled},
	Return:  {from: []string{Shipped, Delivered}, to: Returned},
}

// Outcome is what an action does to a shipment.
type Outcome struct {
	// To is the status after the action.
	To string
	// Changed is false for a repeat: the shipment already is where the
	// action leads, with the same body, and nothing is written.
	Changed bool
	// Restock says the shipment's units go back to stock.
	Restock bool
}

// IllegalError refuses an action from a status it does not start from.
type IllegalError struct {
	From, To string
	Action   Action
}

func (e *IllegalError) Error() string {
	return fmt.Sprintf("A %s shipment cannot become %s.", e.From, e.To)
}

// Decide answers what action does to a shipment in status from. sameBody
// says the request's body equals the one the shipment's last transition
// was made with (carrier and tracking for ship, reason for cancel, reason
// and restock for return; always true for pack and deliver); restock is
// a return's flag.
func Decide(from string, action Action, sameBody, restock bool) (Outcome, error) {
	r, ok := rules[action]
	if !ok {
		return Outcome{}, fmt.Errorf("unknown shipment action %q", action)
	}
	if from == r.to {
		if sameBody {
			return Outcome{To: from}, nil
		}
		return Outcome{}, &IllegalError{From: from, To: r.to, Action: action}
	}
	for _, f := range r.from {
		if f == from {
			return Outcome{To: r.to, Changed: true, Restock: action == Cancel || (action == Return && restock)}, nil
		}
	}
	return Outcome{}, &IllegalError{From: from, To: r.to, Action: action}
}

// Editable reports whether a shipment in status may have its address
// corrected or be split: it has not left the building.
func Editable(status string) bool { return status == Pending || status == Packed }
