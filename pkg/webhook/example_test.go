package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/almoner/almoner/pkg/webhook"
)

// receiver is the handler of docs/examples/webhook-receiver in small: it
// verifies the signature in constant time, rejects stale timestamps and
// acknowledges delivery ids it has seen without acting on them again.
type receiver struct {
	secret string
	mu     sync.Mutex
	seen   map[string]bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if err := webhook.Verify(rc.secret, r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderTimestamp), body, 5*time.Minute); err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(webhook.HeaderDeliveryID)
	rc.mu.Lock()
	dup := rc.seen[id]
	rc.seen[id] = true
	rc.mu.Unlock()
	if dup {
		w.WriteHeader(http.StatusOK)
		return
	}
	fmt.Printf("processed %s\n", r.Header.Get(webhook.HeaderEvent))
	w.WriteHeader(http.StatusNoContent)
}

// ExampleVerify runs a receiver and sends it a signed delivery, the same
// delivery again, a forged one and a stale one.
func ExampleVerify() {
	const secret = "whsec_example"
	srv := httptest.NewServer(&receiver{secret: secret, seen: map[string]bool{}})
	defer srv.Close()

	send := func(ts int64, sigSecret, deliveryID string) int {
		body := []byte(`{"id":"e1","event":"contact.created","timestamp":"2024-01-01T00:00:00Z","data":{}}`)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhook.HeaderEvent, "contact.created")
		req.Header.Set(webhook.HeaderDeliveryID, deliveryID)
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(webhook.HeaderSignature, webhook.Sign(sigSecret, ts, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	now := time.Now().Unix()
	fmt.Println(send(now, secret, "d1"))
	fmt.Println(send(now, secret, "d1"))
	fmt.Println(send(now, "whsec_wrong", "d2"))
	fmt.Println(send(now-3600, secret, "d3"))
	// Output:
	// processed contact.created
	// 204
	// 200
	// 401
	// 401
}
