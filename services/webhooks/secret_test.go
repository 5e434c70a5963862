package webhooks

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestSecretsAndSealing(t *testing.T) {
	t.Parallel()
	s := newSecret()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(raw) < 32 {
		t.Fatalf("secret %q: %d random bytes, err %v", s[:8], len(raw), err)
	}
	if newSecret() == s {
		t.Fatal("two secrets alike")
	}
	key := make([]byte, 32)
	sl, err := newSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	box := sl.seal(s, []byte("endpoint-1"))
	if strings.Contains(string(box), s) {
		t.Fatal("sealed box holds the plain secret")
	}
	if got, err := sl.open(box, []byte("endpoint-1")); err != nil || got != s {
		t.Fatalf("open = %v", err)
	}
	if _, err := sl.open(box, []byte("endpoint-2")); err == nil {
		t.Error("a box opened for another endpoint")
	}
	other, _ := newSealer(append([]byte{1}, key[1:]...))
	if _, err := other.open(box, []byte("endpoint-1")); err == nil {
		t.Error("a box opened with another key")
	}
	if _, err := parseKey(base64.StdEncoding.EncodeToString(key)); err != nil {
		t.Error(err)
	}
	if _, err := parseKey("short"); err == nil {
		t.Error("short key accepted")
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute}
	for i, w := range want {
		if got := retryDelay(time.Minute, i+1); got != w {
			t.Errorf("after attempt %d: %s, want %s", i+1, got, w)
		}
	}
}
