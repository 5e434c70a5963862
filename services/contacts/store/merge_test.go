package store

import (
	"slices"
	"testing"
)

// TestMergedFields: choices, the defaults and the de-duplication of rows.
func TestMergedFields(t *testing.T) {
	s := Fields{Type: Individual, FirstName: "Jane", LastName: "Donor", Notes: "", DoNotCall: true, Tags: []string{"Donor"},
		Emails:        []Email{{ID: 1, Key: "jane@x.org", IsPrimary: true}, {ID: 2, Key: "j@work.org"}},
		Relationships: []Relationship{{RelatedID: 9, Type: Spouse}, {RelatedID: 7, Type: HouseholdMember}}}
	d := Fields{Type: Individual, FirstName: "Janet", LastName: "", Notes: "met at the gala", DoNotEmail: true, Tags: []string{"donor", "gala"},
		Emails:        []Email{{ID: 5, Key: "janet@home.org", IsPrimary: true}, {ID: 6, Key: "jane@x.org"}},
		Phones:        []Phone{{ID: 8, Key: "5551234567", IsPrimary: true}},
		Relationships: []Relationship{{RelatedID: 9, Type: Spouse}, {RelatedID: 1, Type: Spouse}, {RelatedID: 4, Type: Employer}}}
	primary := func(f Fields) int64 {
		for _, e := range f.Emails {
			if e.IsPrimary {
				return e.ID
			}
		}
		return 0
	}
	cases := []struct {
		name        string
		choices     map[string]string
		first, note string
		primary     int64
		noEmail     bool
		noCall      bool
	}{
		{"defaults", nil, "Jane", "met at the gala", 1, true, true},
		{"duplicate's", map[string]string{"firstName": "duplicate", "notes": "survivor", "email": "duplicate", "communicationPreferences": "duplicate"},
			"Janet", "", 5, true, false},
		{"survivor's", map[string]string{"communicationPreferences": "survivor", "email": "survivor"}, "Jane", "met at the gala", 1, false, true},
	}
	for _, c := range cases {
		got := MergedFields(s, d, 1, c.choices)
		if got.FirstName != c.first || got.LastName != "Donor" || got.Notes != c.note || primary(got) != c.primary ||
			got.DoNotEmail != c.noEmail || got.DoNotCall != c.noCall {
			t.Errorf("%s: %+v", c.name, got)
		}
		var ids []int64
		for _, e := range got.Emails {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, []int64{1, 2, 5}) || len(got.Phones) != 1 || !got.Phones[0].IsPrimary {
			t.Errorf("%s: emails %v, phones %v", c.name, ids, got.Phones)
		}
		if !slices.Equal(got.Tags, []string{"Donor", "gala"}) {
			t.Errorf("%s: tags %v", c.name, got.Tags)
		}
		// 9 once, 7 kept, 4 moved; the duplicate's link to the survivor goes.
		if len(got.Relationships) != 3 || got.Relationships[2].RelatedID != 4 {
			t.Errorf("%s: relationships %v", c.name, got.Relationships)
		}
	}
	// A portfolio: the survivor's assignment, the duplicate's when the
	// survivor has none.
	for _, c := range []struct{ survivor, duplicate, want string }{{"", "u2", "u2"}, {"u1", "u2", "u1"}, {"u1", "", "u1"}, {"", "", ""}} {
		sv, dv := s, d
		sv.AssignedUserID, dv.AssignedUserID = c.survivor, c.duplicate
		if got := MergedFields(sv, dv, 1, nil).AssignedUserID; got != c.want {
			t.Errorf("assigned %q and %q merged to %q, want %q", c.survivor, c.duplicate, got, c.want)
		}
	}
	// The inputs are not changed.
	if !s.Emails[0].IsPrimary || s.Emails[1].IsPrimary || len(s.Tags) != 1 {
		t.Errorf("survivor changed: %+v", s)
	}
}
