package money

import (
	"errors"
	"testing"
)

func TestParseMinor(t *testing.T) {
	cases := []struct {
		in, cur string
		want    int64
		err     error
	}{
		{"100.00", "USD", 10000, nil},
		{"100", "USD", 10000, nil},
		{"100.5", "USD", 10050, nil},
		{"0.01", "USD", 1, nil},
		{"-3.25", "EUR", -325, nil},
		{"100.000", "USD", 10000, nil},
		{"100.001", "USD", 0, ErrPrecision},
		{"500", "JPY", 500, nil},
		{"500.5", "JPY", 0, ErrPrecision},
		{"1.234", "KWD", 1234, nil},
		{"", "USD", 0, ErrSyntax},
		{"1.", "USD", 0, ErrSyntax},
		{".5", "USD", 0, ErrSyntax},
		{"1e3", "USD", 0, ErrSyntax},
		{"99999999999999999999", "USD", 0, ErrRange},
	}
	for _, c := range cases {
		got, err := ParseMinor(c.in, c.cur)
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("ParseMinor(%q, %s) = %d, %v; want %d, %v", c.in, c.cur, got, err, c.want, c.err)
		}
	}
}

func TestFormatMinor(t *testing.T) {
	cases := []struct {
		v    int64
		cur  string
		want string
	}{
		{10000, "USD", "100.00"},
		{5, "USD", "0.05"},
		{-325, "EUR", "-3.25"},
		{500, "JPY", "500"},
		{1234, "KWD", "1.234"},
		{0, "USD", "0.00"},
	}
	for _, c := range cases {
		if got := FormatMinor(c.v, c.cur); got != c.want {
			t.Errorf("FormatMinor(%d, %s) = %q, want %q", c.v, c.cur, got, c.want)
		}
		if back, err := ParseMinor(c.want, c.cur); err != nil || back != c.v {
			t.Errorf("round trip %q: %d, %v", c.want, back, err)
		}
	}
}

func FuzzParseMinor(f *testing.F) {
	f.Add("100.00", "USD")
	f.Add("-0.5", "JPY")
	f.Fuzz(func(t *testing.T, s, cur string) {
		v, err := ParseMinor(s, cur)
		if err != nil {
			return
		}
		back, err := ParseMinor(FormatMinor(v, cur), cur)
		if err != nil || back != v {
			t.Fatalf("%q → %d → %q → %d, %v", s, v, FormatMinor(v, cur), back, err)
		}
	})
}
