package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/services/webhooks/store"
)

func TestNewSecret(t *testing.T) {
	t.Parallel()
	s := newSecret()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(raw) < 32 {
		t.Fatalf("secret %q: %d random bytes, err %v", s[:8], len(raw), err)
	}
	if newSecret() == s {
		t.Fatal("two secrets alike")
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

func TestNextAttempt(t *testing.T) {
	t.Parallel()
	claimed := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC) // the database's clock
	asked := time.Now()                                      // this process's
	for _, tc := range []struct {
		name  string
		asked time.Time
		began time.Time
		want  time.Time
	}{
		{"began at once", asked, asked, claimed.Add(time.Minute)},
		{"began late", asked, asked.Add(300 * time.Millisecond), claimed.Add(time.Minute + 300*time.Millisecond)},
		{"clock read before the ask", asked, asked.Add(-time.Second), claimed.Add(time.Minute)},
		{"ask unknown", time.Time{}, asked.Add(time.Second), claimed.Add(time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nextAttempt(store.Claimed{ClaimedAt: claimed, Asked: tc.asked}, tc.began, time.Minute)
			if !got.Equal(tc.want) {
				t.Errorf("next attempt %s, want %s", got, tc.want)
			}
		})
	}
}

// lockedBuffer collects log output from concurrent senders.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUnopenableSecretIsAFailedDelivery registers one endpoint whose secret
// was sealed with another key (as by a process with a key of its own) next
// to a healthy one. Its delivery is not skipped: it is a failed attempt with
// a reason the tenant can read, retried like any other, and the operator's
// log names the endpoint and the setting; the healthy endpoint still gets
// its event.
func TestUnopenableSecretIsAFailedDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	logs := &lockedBuffer{}
	h.s.logger = slog.New(slog.NewJSONHandler(logs, nil))
	good := h.endpoint(t, "contact.created")

	otherKey := bytes.Repeat([]byte{9}, 32)
	other, err := secretbox.New(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	bad := uuid.Must(uuid.NewV7())
	if _, err := h.s.store.CreateEndpoint(context.Background(), store.Endpoint{
		TenantID: h.tenant, ID: bad, Name: "sealed elsewhere", URL: h.rc.URL + "/hook", EventTypes: []string{"contact.created"},
		SecretBox: other.Seal([]byte(newSecret()), bad[:]),
	}, "system"); err != nil {
		t.Fatal(err)
	}

	h.write(t, "c", 1)
	h.d.tick(context.Background())
	if got := h.settle(t, 2); len(got) != 1 {
		t.Fatalf("the receiver got %d requests, want 1 (the healthy endpoint's)", len(got))
	}
	type row struct {
		success bool
		errText *string
		state   string
	}
	read := func(ep uuid.UUID) row {
		var r row
		if err := h.pool.QueryRow(context.Background(), `
			SELECT a.success, a.error, d.state FROM webhooks.attempts a JOIN webhooks.deliveries d ON d.tenant_id = a.tenant_id AND d.id = a.delivery_id
			WHERE a.tenant_id = $1 AND a.endpoint_id = $2`, h.tenant, ep).Scan(&r.success, &r.errText, &r.state); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read(good); !r.success || r.state != "succeeded" {
		t.Errorf("healthy endpoint: success %v, state %s", r.success, r.state)
	}
	r := read(bad)
	if r.success || r.errText == nil || *r.errText != errSecretUnavailable || r.state != "pending" {
		t.Errorf("endpoint sealed elsewhere: success %v, error %v, state %s; want a failed attempt %q, to be retried", r.success, r.errText, r.state, errSecretUnavailable)
	}
	log := logs.String()
	if !strings.Contains(log, "cannot be unsealed") || !strings.Contains(log, secretbox.KeyVar) || !strings.Contains(log, bad.String()) {
		t.Errorf("no log line naming the endpoint and the key: %s", log)
	}
	if strings.Contains(log, good.String()) {
		t.Errorf("the healthy endpoint was logged as unsealable: %s", log)
	}
}
