package normalize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEmail(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"jane@example.org":            "jane@example.org",
		"  Jane.Doe+tag@Example.ORG ": "jane.doe+tag@example.org",
		"o'brien@sub.example.co.uk":   "o'brien@sub.example.co.uk",
		"user@xn--bcher-kva.example":  "user@xn--bcher-kva.example",
		"üser@bücher.example":         "üser@bücher.example",
	}
	for in, want := range good {
		_, key, ok := Email(in)
		if !ok || key != want {
			t.Errorf("Email(%q) = %q, %v; want %q", in, key, ok, want)
		}
	}
	for _, bad := range []string{"", "jane", "jane@", "@example.org", "jane@example", "jane@@example.org",
		"Jane <jane@example.org>", "jane @example.org", "jane@exa mple.org", "jane@-example.org", "jane@example.123",
		"jane@example..org", "jane@.example.org", strings.Repeat("a", 65) + "@example.org", "a@" + strings.Repeat("b", 250) + ".org",
		"jane\x00@example.org", "jane@exa\nmple.org"} {
		if _, _, ok := Email(bad); ok {
			t.Errorf("Email(%q) accepted", bad)
		}
	}
}

func TestPhone(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"+1 (555) 123-4567":     "5551234567",
		"(555) 123-4567":        "5551234567",
		"555.123.4567 ext. 12":  "5551234567",
		"555-123-4567 x9":       "5551234567",
		"+44 20 7946 0958":      "2079460958",
		"0044 20 7946 0958":     "2079460958",
		"123-4567":              "1234567",
		"  +33 1 23 45 67 89  ": "3123456789",
	}
	for in, want := range good {
		_, key, ok := Phone(in)
		if !ok || key != want {
			t.Errorf("Phone(%q) = %q, %v; want %q", in, key, ok, want)
		}
	}
	for _, bad := range []string{"", "12345", "call me", "555-1234-5678-9012-34", "1+555 123 4567", "555 123 4567 ext",
		"555 123 4567 x12a", "555_123_4567", strings.Repeat("1", 31)} {
		if _, _, ok := Phone(bad); ok {
			t.Errorf("Phone(%q) accepted", bad)
		}
	}
}

func TestPostalCode(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, country, key string }{
		{"02134", "US", "02134"},
		{"02134-1234", "US", "02134"},
		{"021341234", "", "02134"},
		{"sw1a 1aa", "GB", "SW1A1AA"},
		{"K1A 0B1", "CA", "K1A0B1"},
		{"12345-6789", "DE", "123456789"},
	}
	for _, c := range cases {
		_, key, ok := PostalCode(c.in, c.country)
		if !ok || key != c.key {
			t.Errorf("PostalCode(%q, %q) = %q, %v; want %q", c.in, c.country, key, ok, c.key)
		}
	}
	for _, bad := range []string{"", " - ", "12#45", strings.Repeat("1", 21)} {
		if _, _, ok := PostalCode(bad, "US"); ok {
			t.Errorf("PostalCode(%q) accepted", bad)
		}
	}
}

func TestCountry(t *testing.T) {
	t.Parallel()
	if len(iso3166) != 249 {
		t.Errorf("%d codes, want the 249 assigned ones", len(iso3166))
	}
	for in, want := range map[string]string{"US": "US", "us": "US", " gb ": "GB", "ss": "SS"} {
		if got, ok := Country(in); !ok || got != want {
			t.Errorf("Country(%q) = %q, %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "XX", "UK", "USA", "U", "ZZ", "EU"} {
		if _, ok := Country(bad); ok {
			t.Errorf("Country(%q) accepted", bad)
		}
	}
}

func TestNameKey(t *testing.T) {
	t.Parallel()
	if got := NameKey("  Jane ", "", " DOE  Smith"); got != "jane doe smith" {
		t.Errorf("NameKey = %q", got)
	}
}

func FuzzEmail(f *testing.F) {
	for _, s := range []string{"jane@example.org", "a@b.c", "\"a b\"@example.org", "x@[1.2.3.4]", "üser@bücher.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, key, ok := Email(s)
		if !ok {
			return
		}
		if len(addr) > MaxEmailLength || !utf8.ValidString(addr) || strings.ContainsAny(addr, " \t\r\n\x00") {
			t.Fatalf("Email(%q) accepted %q", s, addr)
		}
		if key != strings.ToLower(addr) {
			t.Fatalf("key %q of %q", key, addr)
		}
		if _, key2, ok := Email(addr); !ok || key2 != key {
			t.Fatalf("not idempotent: %q", addr)
		}
	})
}

func FuzzPhone(f *testing.F) {
	for _, s := range []string{"+1 (555) 123-4567", "555.123.4567 ext. 12", "0044 20 7946 0958", "x", "#1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		number, key, ok := Phone(s)
		if !ok {
			return
		}
		if len(number) > MaxPhoneLength || len(key) < MinPhoneDigits || len(key) > phoneKeyDigits || strings.Trim(key, "0123456789") != "" {
			t.Fatalf("Phone(%q) = %q, %q", s, number, key)
		}
		if _, key2, ok := Phone(number); !ok || key2 != key {
			t.Fatalf("not idempotent: %q", number)
		}
	})
}

func FuzzPostalCode(f *testing.F) {
	f.Add("02134-1234", "US")
	f.Add("SW1A 1AA", "GB")
	f.Fuzz(func(t *testing.T, s, country string) {
		code, key, ok := PostalCode(s, country)
		if !ok {
			return
		}
		if len(code) > MaxPostalCodeLength || key == "" || strings.Trim(key, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			t.Fatalf("PostalCode(%q) = %q, %q", s, code, key)
		}
	})
}

func TestOneOf(t *testing.T) {
	set := []string{"Cash", "Check", "InHonorOf"}
	for _, tc := range []struct{ in, want string }{
		{"cash", "Cash"},
		{"  CHECK ", "Check"},
		{"inhonorof", "InHonorOf"},
		{"Cheque", ""},
		{"", ""},
		{"Ca sh", ""},
	} {
		if got := OneOf(set, tc.in); got != tc.want {
			t.Errorf("OneOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzOneOf(f *testing.F) {
	set := []string{"weekly", "monthly", "Card", "Ach"}
	for _, s := range []string{"WEEKLY", " card ", "ach\x00", "ﬀ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := OneOf(set, s)
		if got == "" {
			return
		}
		if !strings.EqualFold(got, strings.TrimSpace(s)) {
			t.Errorf("OneOf(%q) = %q, which it does not equal", s, got)
		}
	})
}
