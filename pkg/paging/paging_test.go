package paging

import (
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
)

func ptr(v int32) *int32 { return &v }

func TestParse(t *testing.T) {
	cases := []struct {
		name       string
		page, size *int32
		token      string
		want       Page
		badField   string
	}{
		{"defaults", nil, nil, "", Page{Number: 1, Size: 20}, ""},
		{"explicit", ptr(3), ptr(50), "", Page{Number: 3, Size: 50}, ""},
		{"page zero", ptr(0), nil, "", Page{}, "Page"},
		{"page negative", ptr(-1), nil, "", Page{}, "Page"},
		{"size zero", nil, ptr(0), "", Page{}, "PageSize"},
		{"size over max", nil, ptr(101), "", Page{}, "PageSize"},
		{"bad token", nil, nil, "!!", Page{}, "PageToken"},
		{"wrong version", nil, nil, "AA", Page{}, "PageToken"},
	}
	for _, c := range cases {
		got, err := Parse(c.page, c.size, c.token, Standard)
		if c.badField != "" {
			e, ok := apperr.As(err)
			if !ok || len(e.Violations) != 1 || e.Violations[0].Field != c.badField {
				t.Errorf("%s: err = %v, want a violation of %s", c.name, err, c.badField)
			}
			continue
		}
		if err != nil || got.Number != c.want.Number || got.Size != c.want.Size {
			t.Errorf("%s: got %+v, %v", c.name, got, err)
		}
	}
}

func TestTokenRoundTrip(t *testing.T) {
	type cursor struct {
		ID   int64  `json:"i"`
		Name string `json:"n"`
	}
	tok := EncodeToken(cursor{ID: 42, Name: "Ng"})
	p, err := Parse(nil, nil, tok, Standard)
	if err != nil {
		t.Fatal(err)
	}
	var c cursor
	if err := DecodeToken(p.Token, &c); err != nil || c.ID != 42 || c.Name != "Ng" {
		t.Fatalf("got %+v, %v", c, err)
	}
	if err := DecodeToken([]byte("nope"), &c); !apperr.IsKind(err, apperr.KindInvalid) {
		t.Fatalf("bad payload: %v", err)
	}
}
