package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestNotificationBodiesMemory posts, as a stranger would, rounds of
// parallel ~1 MB bodies to /api/webhooks/stripe/{slug} of a tenant whose
// Stripe account is connected, to a server running every target in one
// child process (as `almoner serve`): 40 of 900 KB and 150 of 1 MB with a
// wrong signature, then 40 of 900 KB signed with the tenant's secret (an
// event the account could send). The child's peak RSS (VmHWM) must stay
// within 100 MB of its idle RSS: the body budget's public share is
// 16 MiB, and every copy of an admitted body (the gateway's, the gRPC
// hop's, the event's parse) counts against it (docs/gateway.md).
//
// The race detector multiplies every allocation's cost (it measured
// +103 MB in CI's -race pass), so the figure is taken without it, in
// make test's own pass.
func TestNotificationBodiesMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race in its own pass of make test")
	}
	t.Parallel()
	// The child opens the tenant's sealed webhook secret: the same key.
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_WEBHOOK_SECRET_KEY": testSecretKey}})
	st := newStripeTenant(t, c)
	addr := apptest.FreeAddr(t)
	env := []string{"DATABASE_URL=" + c.DatabaseURL, "ALMONER_METRICS_ADDR=off", "ALMONER_HTTP_ADDR=" + addr,
		"ALMONER_GRPC_ADDR=" + apptest.FreeAddr(t), "ALMONER_IMPORTS_RUNNER=false", "ALMONER_ORDERS_RUNNER=false"}
	for k, v := range c.Settings {
		env = append(env, k+"="+v)
	}
	child := apptest.StartChild(t, "all", env...)
	base := "http://" + addr
	waitHealthy(t, base, child)
	url := base + "/api/webhooks/stripe/" + st.slug
	// Warm up every path once (connections, pools, the tenant's lookup).
	postNotifications(t, url, 4, 1000, "t=1,v1=00")
	idle := procStatusMB(t, child.Cmd.Process.Pid, "VmRSS")

	counts := map[int]int{}
	for status, n := range postNotifications(t, url, 40, 900_000, "t=1,v1=00") {
		counts[status] += n
	}
	for status, n := range postNotifications(t, url, 150, 1_000_000, "t=1,v1=00") {
		counts[status] += n
	}
	for status, n := range postNotifications(t, url, 40, 900_000, "whsec:"+st.webhookSecret) {
		counts[status] += n
	}
	peak := procStatusMB(t, child.Cmd.Process.Pid, "VmHWM")
	t.Logf("RSS idle %d MB, peak %d MB (+%d MB); answers %v", idle, peak, peak-idle, counts)
	if counts[http.StatusBadRequest] == 0 || counts[http.StatusOK] == 0 {
		t.Errorf("answers %v: want some bodies admitted and judged (400 bad signature, 200 signed)", counts)
	}
	if peak-idle >= 100 {
		t.Errorf("peak RSS %d MB is %d MB above idle (%d MB), want under 100", peak, peak-idle, idle)
	}
}

// waitHealthy waits for the child's /healthz.
func waitHealthy(t *testing.T, base string, child *apptest.Child) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-child.Done():
			t.Fatalf("child exited: %v", child.Err())
		default:
		}
		if resp, err := apptest.Get(t.Context(), nil, base+"/healthz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatal("the child never served /healthz")
}

// postNotifications sends n bodies of size bytes at once, each a Stripe
// event whose object carries size bytes of metadata, and counts the
// answers by status. sig is the Stripe-Signature header, or "whsec:" and
// the secret to sign each body with.
func postNotifications(t *testing.T, url string, n, size int, sig string) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := stripeEventOfSize(fmt.Sprintf("evt_mem_%d_%d", size, i), size)
			header := sig
			if secret, ok := strings.CutPrefix(sig, "whsec:"); ok {
				header = stripeSignature(body, secret)
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Stripe-Signature", header)
			status := 0
			if resp, err := http.DefaultClient.Do(req); err == nil {
				status = resp.StatusCode
				_ = resp.Body.Close()
			}
			mu.Lock()
			counts[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}

// stripeEventOfSize is a payment_intent.succeeded event of about size
// bytes, most of them one metadata value.
func stripeEventOfSize(id string, size int) []byte {
	head := `{"id":"` + id + `","object":"event","type":"payment_intent.succeeded","api_version":"2025-06-30.basil","created":1,"livemode":false,` +
		`"data":{"object":{"id":"pi_mem","object":"payment_intent","status":"succeeded","metadata":{"filler":"`
	tail := `"}}}}`
	return []byte(head + strings.Repeat("x", max(0, size-len(head)-len(tail))) + tail)
}

// stripeSignature is the Stripe-Signature header Stripe would send for
// body, signed now with secret.
func stripeSignature(body []byte, secret string) string {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// procStatusMB reads a size field of /proc/<pid>/status in MB.
func procStatusMB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
