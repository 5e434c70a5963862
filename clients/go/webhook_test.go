package almoner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"
)

func sign(secret string, ts int64, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10) + "." + body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// TestVerifyWebhook: the signature scheme of docs/webhooks.md. The e2e
// test TestClients checks a real delivery of the server too.
func TestVerifyWebhook(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := now.Unix()
	body := `{"id":"evt_1","event":"order.created"}`
	good := sign("whsec_a", ts, body)
	for _, tc := range []struct {
		name, sig, ts, body string
		want                error
	}{
		{"valid", good, strconv.FormatInt(ts, 10), body, nil},
		{"upper-case hex", "sha256=" + hexUpper(good[7:]), strconv.FormatInt(ts, 10), body, nil},
		{"other body", good, strconv.FormatInt(ts, 10), body + " ", ErrWebhookSignatureMismatch},
		{"other secret", sign("whsec_b", ts, body), strconv.FormatInt(ts, 10), body, ErrWebhookSignatureMismatch},
		{"other timestamp", good, strconv.FormatInt(ts+1, 10), body, ErrWebhookSignatureMismatch},
		{"stale", sign("whsec_a", ts-301, body), strconv.FormatInt(ts-301, 10), body, ErrWebhookStale},
		{"future", sign("whsec_a", ts+301, body), strconv.FormatInt(ts+301, 10), body, ErrWebhookStale},
		{"missing", "", strconv.FormatInt(ts, 10), body, ErrWebhookMissingSignature},
		{"no prefix", good[7:], strconv.FormatInt(ts, 10), body, ErrWebhookMalformedSignature},
		{"short", good[:20], strconv.FormatInt(ts, 10), body, ErrWebhookMalformedSignature},
		{"bad timestamp", good, "yesterday", body, ErrWebhookMalformedSignature},
	} {
		err := verifyWebhookAt("whsec_a", tc.sig, tc.ts, []byte(tc.body), DefaultWebhookTolerance, now)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func hexUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
