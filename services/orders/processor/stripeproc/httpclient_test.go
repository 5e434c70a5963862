package stripeproc_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

// TestNewHTTPClientKeepsConnections: sixteen charges at once, ten times
// over, to an HTTP/1.1 API open about sixteen connections, not one per
// charge beyond net/http's default two idle ones.
func TestNewHTTPClientKeepsConnections(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"id":"pi_1"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := stripeproc.NewHTTPClient()
	const clients, rounds = 16, 10
	for range rounds {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/payment_intents", nil)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		wg.Wait()
	}
	// Each round may dial a few before the last round's connections are
	// back in the pool; a connection per request would be 160.
	if n := opened.Load(); n > 3*clients {
		t.Fatalf("%d connections for %d requests of %d clients, want at most %d", n, clients*rounds, clients, 3*clients)
	}
	if c.Timeout != stripeproc.DefaultTimeout {
		t.Fatalf("timeout %v, want %v", c.Timeout, stripeproc.DefaultTimeout)
	}
}
