package paging

import (
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
)

type testToken struct {
	After string `json:"a"`
	Position
}

func TestResume(t *testing.T) {
	key := FilterKey(20, "Completed", "")
	other := FilterKey(50, "Completed", "")
	tests := []struct {
		name      string
		token     string // "" → no token
		wantOK    bool
		wantErr   bool
		wantPage  int32
		wantTotal int64
		wantAfter string
	}{
		{name: "no token", wantPage: 1},
		{name: "a token of this list", token: EncodeToken(testToken{After: "x", Position: Position{Page: 3, Filter: key, Total: 41}}),
			wantOK: true, wantPage: 3, wantTotal: 41, wantAfter: "x"},
		{name: "another page size", token: EncodeToken(testToken{After: "x", Position: Position{Page: 3, Filter: other}}), wantErr: true},
		{name: "page 1 is never a token", token: EncodeToken(testToken{Position: Position{Page: 1, Filter: key}}), wantErr: true},
		{name: "a negative total", token: EncodeToken(testToken{Position: Position{Page: 2, Filter: key, Total: -1}}), wantErr: true},
		{name: "not this shape", token: EncodeToken([]int{1}), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg, err := Parse(nil, nil, tc.token, Standard)
			if err != nil {
				t.Fatal(err)
			}
			var tok testToken
			ok, total, err := Resume(&pg, key, &tok)
			if tc.wantErr {
				ae, ok := apperr.As(err)
				if !ok || ae.Kind != apperr.KindInvalid || len(ae.Violations) != 1 || ae.Violations[0].Field != "PageToken" {
					t.Fatalf("Resume = %v, want a 400 under PageToken", err)
				}
				return
			}
			if err != nil || ok != tc.wantOK || pg.Number != tc.wantPage || total != tc.wantTotal || tok.After != tc.wantAfter {
				t.Errorf("Resume = %v, %d, %v (page %d, after %q); want %v, %d (page %d, after %q)",
					ok, total, err, pg.Number, tok.After, tc.wantOK, tc.wantTotal, tc.wantPage, tc.wantAfter)
			}
		})
	}
}

func TestFilterKeyTellsListsApart(t *testing.T) {
	at := time.Date(2026, 4, 12, 0, 0, 0, 0, time.UTC)
	keys := map[string]string{}
	for name, k := range map[string]string{
		"plain":             FilterKey(20, "a", ""),
		"other size":        FilterKey(21, "a", ""),
		"values shifted":    FilterKey(20, "", "a"),
		"with a time bound": FilterKey(20, "a", TimeKey(&at)),
	} {
		if prev, dup := keys[k]; dup {
			t.Errorf("%s and %s share key %s", name, prev, k)
		}
		keys[k] = name
	}
	if FilterKey(20, "a", TimeKey(nil)) != FilterKey(20, "a", "") {
		t.Error("an absent time bound is not the empty value")
	}
}

func TestTimeBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" → nil; "!" → a violation
	}{
		{"", ""},
		{"  ", ""},
		{"2026-04-12", "2026-04-12T00:00:00Z"},
		{"2026-04-12T10:30:00.5+02:00", "2026-04-12T08:30:00.5Z"},
		{"12/04/2026", "!"},
		{"2026-13-01", "!"},
	} {
		var v apperr.Violations
		got := TimeBound(&v, "CreatedFrom", tc.in)
		switch tc.want {
		case "!":
			if got != nil || v.Err() == nil {
				t.Errorf("TimeBound(%q) = %v, %v; want a violation", tc.in, got, v.Err())
			}
		case "":
			if got != nil || v.Err() != nil {
				t.Errorf("TimeBound(%q) = %v, %v; want no bound", tc.in, got, v.Err())
			}
		default:
			if got == nil || got.UTC().Format(time.RFC3339Nano) != tc.want || v.Err() != nil {
				t.Errorf("TimeBound(%q) = %v, %v; want %s", tc.in, got, v.Err(), tc.want)
			}
		}
	}
}
