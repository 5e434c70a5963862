package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSignKnownAnswer pins the signature to digests computed outside Go
// (`printf '%s' '<timestamp>.<body>' | openssl dgst -sha256 -hmac <secret>`),
// so a change in the signed message's layout cannot go unnoticed.
func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		secret string
		ts     int64
		body   string
		want   string
	}{
		{"whsec_test", 1700000000, `{"id":"1"}`, "sha256=11bf4466ea17c3df3fd743af0b435368e16b7a05eb8eced85e8c4670767bdec5"},
		{"key", 0, "", "sha256=85841b4efc3cd7776c3c8f9b7cca9e281c550e5d19889d78e9e669c6337f000d"},
		{"whsec_AbC123+/=", 1712345678, `{"id":"0190a4d6-0000-7000-8000-000000000001","event":"contact.created","timestamp":"2024-04-05T19:34:38Z","data":{"entity_type":"Contact","entity_id":"42","action":"Created","changes":null,"user_id":"api-key:ak_test_abc"}}`,
			"sha256=588dddd8e2f718b82b3d0a89d602ad7f5757ca067e6477194df07f666a6b3ab9"},
	}
	for _, tc := range cases {
		if got := Sign(tc.secret, tc.ts, []byte(tc.body)); got != tc.want {
			t.Errorf("Sign(%q, %d, %q) = %s, want %s", tc.secret, tc.ts, tc.body, got, tc.want)
		}
		if err := Verify(tc.secret, tc.want, strconv.FormatInt(tc.ts, 10), []byte(tc.body), 0); err != nil {
			t.Errorf("Verify of the known answer: %v", err)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"x","event":"order.created"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	good := Sign("s3cret", now.Unix(), body)
	cases := []struct {
		name           string
		secret, header string
		timestamp      string
		body           []byte
		tolerance      time.Duration
		want           error
	}{
		{"valid", "s3cret", good, ts, body, 5 * time.Minute, nil},
		{"valid, upper-case hex", "s3cret", "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), ts, body, time.Minute, nil},
		{"no tolerance check", "s3cret", Sign("s3cret", 1, body), "1", body, 0, nil},
		{"missing header", "s3cret", "", ts, body, time.Minute, ErrMissingSignature},
		{"missing timestamp", "s3cret", good, "", body, time.Minute, ErrMissingSignature},
		{"wrong secret", "other", good, ts, body, time.Minute, ErrMismatch},
		{"body changed", "s3cret", good, ts, append([]byte(" "), body...), time.Minute, ErrMismatch},
		{"timestamp changed", "s3cret", good, strconv.FormatInt(now.Unix()+1, 10), body, time.Minute, ErrMismatch},
		{"no prefix", "s3cret", strings.TrimPrefix(good, "sha256="), ts, body, time.Minute, ErrMalformedSignature},
		{"other algorithm", "s3cret", "sha1=" + strings.TrimPrefix(good, "sha256="), ts, body, time.Minute, ErrMalformedSignature},
		{"short digest", "s3cret", good[:len(good)-2], ts, body, time.Minute, ErrMalformedSignature},
		{"not hex", "s3cret", good[:len(good)-1] + "g", ts, body, time.Minute, ErrMalformedSignature},
		{"timestamp not a number", "s3cret", good, "yesterday", body, time.Minute, ErrMalformedSignature},
		{"stale", "s3cret", Sign("s3cret", now.Unix()-301, body), strconv.FormatInt(now.Unix()-301, 10), body, 5 * time.Minute, ErrStale},
		{"future", "s3cret", Sign("s3cret", now.Unix()+301, body), strconv.FormatInt(now.Unix()+301, 10), body, 5 * time.Minute, ErrStale},
	}
	for _, tc := range cases {
		if err := verifyAt(tc.secret, tc.header, tc.timestamp, tc.body, tc.tolerance, now); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzParseSignature feeds the header parser arbitrary text: it must not
// panic, and whatever it accepts must be a SHA-256 digest that Sign's
// format round-trips.
func FuzzParseSignature(f *testing.F) {
	for _, s := range []string{"", "sha256=", Sign("k", 1, nil), "sha256=zz", "SHA256=00", " sha256=" + strings.Repeat("a", 64) + " "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		d, err := ParseSignature(header)
		if err != nil {
			return
		}
		if len(d) != sha256.Size {
			t.Fatalf("accepted %q with a %d-byte digest", header, len(d))
		}
		if got := SignaturePrefix + hex.EncodeToString(d); !strings.EqualFold(got, strings.TrimSpace(header)) {
			t.Fatalf("accepted %q but it re-encodes as %q", header, got)
		}
		// A parsed header never verifies a body it was not made for.
		m := hmac.New(sha256.New, []byte("k"))
		m.Write([]byte("1.body"))
		if hmac.Equal(d, m.Sum(nil)) && Verify("k", header, "1", []byte("other"), 0) == nil {
			t.Fatal("verified a different body")
		}
	})
}
