package apptest

import (
	"net"
	"net/http"
	"testing"
)

// TestSplitStartRetriesATakenPort: when a port picked for a split cluster
// is taken before its service listens, the cluster starts again on new
// ports instead of failing the test. Not parallel: it replaces pickAddr.
func TestSplitStartRetriesATakenPort(t *testing.T) {
	taken, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	calls := 0
	pickAddr = func(t testing.TB) string {
		calls++
		if calls == 1 {
			return taken.Addr().String() // the first service's port is in use
		}
		return FreeAddr(t)
	}
	t.Cleanup(func() { pickAddr = FreeAddr })
	c := Start(t, Options{Split: true})
	if calls <= len(c.addrs) {
		t.Fatalf("%d addresses picked for %d services: no second start", calls, len(c.addrs))
	}
	resp, err := Get(t.Context(), c.HTTP, c.URL+"/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz = %d", resp.StatusCode)
	}
}
