package shipstore

import (
	"errors"
	"testing"

	"github.com/google/uuid"
)

func TestPlanSplit(t *testing.T) {
	tote, mug := uuid.New(), uuid.New()
	lines := []Line{{LineNumber: 1, ItemID: tote, Quantity: 2}, {LineNumber: 2, ItemID: mug, Quantity: 1}, {LineNumber: 3, ItemID: tote, Quantity: 1}}
	for _, tc := range []struct {
		name        string
		parts       []SplitPart
		kept, moved map[int32]int32 // line number → quantity
		errIndex    int             // -2: no error
	}{
		{"one unit", []SplitPart{{tote, 1}}, map[int32]int32{1: 1, 2: 1, 3: 1}, map[int32]int32{1: 1}, -2},
		{"across lines of one item", []SplitPart{{tote, 3}}, map[int32]int32{2: 1}, map[int32]int32{1: 2, 3: 1}, -2},
		{"two items", []SplitPart{{mug, 1}, {tote, 2}}, map[int32]int32{3: 1}, map[int32]int32{1: 2, 2: 1}, -2},
		{"more than the shipment has", []SplitPart{{tote, 4}}, nil, nil, 0},
		{"an item it does not carry", []SplitPart{{mug, 1}, {uuid.New(), 1}}, nil, nil, 1},
		{"everything", []SplitPart{{tote, 3}, {mug, 1}}, nil, nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, moved, err := planSplit(lines, tc.parts)
			if tc.errIndex != -2 {
				var se *SplitError
				if !errors.As(err, &se) || se.Index != tc.errIndex {
					t.Fatalf("err = %v, want SplitError at %d", err, tc.errIndex)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got []Line, want map[int32]int32) {
				if len(got) != len(want) {
					t.Errorf("%s = %+v, want %v", what, got, want)
				}
				for _, l := range got {
					if want[l.LineNumber] != l.Quantity {
						t.Errorf("%s line %d = %d, want %d", what, l.LineNumber, l.Quantity, want[l.LineNumber])
					}
				}
			}
			check("kept", kept, tc.kept)
			check("moved", moved, tc.moved)
		})
	}
	if lines[0].Quantity != 2 || lines[2].Quantity != 1 {
		t.Errorf("planSplit changed its input: %+v", lines)
	}
}
