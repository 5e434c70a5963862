package state

import (
	"errors"
	"testing"
)

func TestDecide(t *testing.T) {
	all := []string{Pending, Packed, Shipped, Delivered, Cancelled, Returned}
	legal := map[Action]map[string]Outcome{
		Pack:    {Pending: {To: Packed, Changed: true}},
		Ship:    {Pending: {To: Shipped, Changed: true}, Packed: {To: Shipped, Changed: true}},
		Deliver: {Shipped: {To: Delivered, Changed: true}},
		Cancel:  {Pending: {To: Cancelled, Changed: true, Restock: true}, Packed: {To: Cancelled, Changed: true, Restock: true}},
		Return:  {Shipped: {To: Returned, Changed: true, Restock: true}, Delivered: {To: Returned, Changed: true, Restock: true}},
	}
	for action, from := range legal {
		target := rules[action].to
		for _, s := range all {
			got, err := Decide(s, action, true, true)
			want, ok := from[s]
			switch {
			case ok:
				if err != nil || got != want {
					t.Errorf("%s from %s = %+v, %v; want %+v", action, s, got, err, want)
				}
			case s == target:
				if err != nil || got != (Outcome{To: s}) {
					t.Errorf("repeat %s from %s = %+v, %v; want no change", action, s, got, err)
				}
			default:
				var ie *IllegalError
				if !errors.As(err, &ie) || ie.From != s || ie.To != target {
					t.Errorf("%s from %s: err %v, want IllegalError %s→%s", action, s, err, s, target)
				}
			}
		}
	}
}

func TestDecideRepeatWithAnotherBody(t *testing.T) {
	for _, tc := range []struct {
		from   string
		action Action
	}{{Shipped, Ship}, {Cancelled, Cancel}, {Returned, Return}} {
		if _, err := Decide(tc.from, tc.action, false, false); err == nil {
			t.Errorf("%s from %s with another body: no error", tc.action, tc.from)
		}
	}
}

func TestReturnWithoutRestock(t *testing.T) {
	got, err := Decide(Delivered, Return, true, false)
	if err != nil || got != (Outcome{To: Returned, Changed: true}) {
		t.Errorf("return without restock = %+v, %v", got, err)
	}
}

func TestEditable(t *testing.T) {
	for s, want := range map[string]bool{Pending: true, Packed: true, Shipped: false, Delivered: false, Cancelled: false, Returned: false} {
		if Editable(s) != want {
			t.Errorf("Editable(%s) = %v", s, !want)
		}
	}
}
