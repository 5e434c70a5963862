package contacts

import (
	"testing"
)

func TestParseIfMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		version int64
		match   bool
	}{
		{`"3"`, 3, true},
		{`"3"`, 4, false},
		{`*`, 9, true},
		{` "2", "3" `, 3, true},
		{`W/"3"`, 3, false},
		{`W/"3", "3"`, 3, true},
	}
	for _, c := range cases {
		m, err := parseIfMatchValue(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := m.matches(c.version); got != c.match {
			t.Errorf("%q matches %d = %v", c.in, c.version, got)
		}
	}
	for _, bad := range []string{`3`, `"3`, `"a b"`, `,`, `**`, `"3" x`} {
		if _, err := parseIfMatchValue(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if (ifMatch{}).matches(5) != true {
		t.Error("no header must match")
	}
}

func FuzzParseIfMatch(f *testing.F) {
	for _, s := range []string{`"1"`, `*`, `W/"2", "3"`, `"`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseIfMatchValue(s)
		if err != nil {
			return
		}
		if !m.present {
			t.Fatalf("%q parsed as absent", s)
		}
		for _, tag := range m.tags {
			if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
				t.Fatalf("%q gave tag %q", s, tag)
			}
		}
	})
}
