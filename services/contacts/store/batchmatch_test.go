package store

import "testing"

// TestBatchMatches: the rules of the earlier-row match, against what an
// existing contact already matched (what the windows of the SQL it
// replaced gave).
func TestBatchMatches(t *testing.T) {
	row := func(ext, email, postal, first string) ImportRow {
		f := Fields{Type: Individual, FirstName: first, LastName: "Doe", ExternalID: ext}
		if email != "" {
			f.Emails = []Email{{Address: email, Key: email}}
		}
		if postal != "" {
			f.Addresses = []Address{{Line1: "1 Main St", PostalKey: postal}}
		}
		return ImportRow{Fields: f}
	}
	existing := func(byExt bool) *rowMatch { return &rowMatch{contact: 7, earlier: -1, byExternal: byExt} }
	cases := []struct {
		name     string
		rows     []ImportRow
		existing []*rowMatch
		want     []*rowMatch
	}{
		{"nothing shared", []ImportRow{row("a", "a@x", "", "A"), row("b", "b@x", "", "B")}, nil, []*rowMatch{nil, nil}},
		{"email", []ImportRow{row("", "a@x", "", "A"), row("", "b@x", "", "B"), row("", "a@x", "", "C")}, nil,
			[]*rowMatch{nil, nil, {earlier: 0}}},
		{"name at postal code, the first of two", []ImportRow{row("", "", "02134", "Sam"), row("", "b@x", "02134", "Sam"), row("", "b@x", "02134", "Sam")}, nil,
			[]*rowMatch{nil, {earlier: 0}, {earlier: 0}}},
		{"name without postal code", []ImportRow{row("", "", "", "Sam"), row("", "", "", "Sam")}, nil, []*rowMatch{nil, nil}},
		{"external id beats an earlier email", []ImportRow{row("", "a@x", "", "A"), row("k", "b@x", "", "B"), row("k", "a@x", "", "C")}, nil,
			[]*rowMatch{nil, nil, {earlier: 1, byExternal: true}}},
		{"existing by email wins over an earlier email", []ImportRow{row("", "a@x", "", "A"), row("", "a@x", "", "B")},
			[]*rowMatch{nil, existing(false)}, []*rowMatch{nil, existing(false)}},
		{"earlier external id wins over existing by email", []ImportRow{row("k", "", "", "A"), row("k", "a@x", "", "B")},
			[]*rowMatch{nil, existing(false)}, []*rowMatch{nil, {earlier: 0, byExternal: true}}},
		{"existing by external id wins", []ImportRow{row("k", "", "", "A"), row("k", "", "", "B")},
			[]*rowMatch{nil, existing(true)}, []*rowMatch{nil, existing(true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := make([]*rowMatch, len(c.rows))
			copy(out, c.existing)
			batchMatches(c.rows, out)
			for i := range out {
				got, want := out[i], c.want[i]
				if (got == nil) != (want == nil) || got != nil && *got != *want {
					t.Errorf("row %d: %+v, want %+v", i, got, want)
				}
			}
		})
	}
}
