package keyformat

import (
	"strings"
	"testing"
)

func TestNewParseRoundTrip(t *testing.T) {
	for _, env := range []string{Sandbox, Production} {
		k, err := New(env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(k.Plain)
		if err != nil {
			t.Fatalf("Parse(%q): %v", k.Plain, err)
		}
		if got != k {
			t.Errorf("Parse = %+v, want %+v", got, k)
		}
		if !strings.HasPrefix(k.Plain, k.Prefix) || len(k.Prefix) != 20 {
			t.Errorf("prefix %q of %q", k.Prefix, k.Plain)
		}
	}
}

func TestParseRejects(t *testing.T) {
	k, err := New(Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	cases := map[string]string{
		"empty":          "",
		"no prefix":      strings.TrimPrefix(k.Plain, "ak_test_"),
		"other prefix":   "ak_prod_" + k.Plain[8:],
		"short":          k.Plain[:len(k.Plain)-1],
		"long":           k.Plain + "a",
		"secret changed": flip(k.Plain, 30),
		"lookup changed": flip(k.Plain, 10),
		"check changed":  flip(k.Plain, len(k.Plain)-1),
		"bad char":       k.Plain[:25] + "-" + k.Plain[26:],
	}
	for name, s := range cases {
		if _, err := Parse(s); err == nil {
			t.Errorf("%s: Parse(%q) accepted", name, s)
		}
	}
}

func TestKeysDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		k, err := New(Production)
		if err != nil {
			t.Fatal(err)
		}
		if seen[k.Plain] || seen[k.LookupID] {
			t.Fatal("duplicate key")
		}
		seen[k.Plain], seen[k.LookupID] = true, true
	}
}

func FuzzParse(f *testing.F) {
	k, _ := New(Sandbox)
	f.Add(k.Plain)
	f.Add("ak_live_")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err != nil {
			return
		}
		if got.Plain != s || !strings.HasPrefix(s, got.Prefix) {
			t.Fatalf("Parse(%q) = %+v", s, got)
		}
	})
}
