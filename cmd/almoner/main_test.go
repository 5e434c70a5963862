package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/cmd/almoner/internal/app"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/testdb"
)

// TestMain lets a test run the binary's main in a child process of the
// test binary itself, for tests that need real signals. The tests' admin
// commands run in this process and read the internal key from its
// environment, as an operator's shell gives it: every server of these
// tests (children inherit the environment; clusters: startCluster) signs
// with that one key.
func TestMain(m *testing.M) {
	if args := os.Getenv("ALMONER_TEST_RUN_MAIN"); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	if os.Getenv(authctx.KeyVar) == "" {
		_ = os.Setenv(authctx.KeyVar, authctx.NewKeyHex())
	}
	// Every cluster, child process and client of these tests is stopped
	// with its test: a goroutine left once they pass is a leak.
	goleak.VerifyTestMain(m)
}

// startCluster starts a cluster that signs with this process's internal
// key, so that runCLI's admin commands can call it.
func startCluster(t *testing.T) *apptest.Cluster {
	t.Helper()
	return apptest.Start(t, apptest.Options{Settings: map[string]string{authctx.KeyVar: os.Getenv(authctx.KeyVar)}})
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	if strings.Count(strings.TrimSpace(s), "\n") != 0 {
		t.Fatalf("want one JSON line, got %q", s)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("stdout %q: %v", s, err)
	}
	return m
}

// TestServicesListsNeeds: `almoner services` prints every service, one a
// line with its name first (scripts/run-split.sh reads that word), each
// after the services it needs and followed by them.
func TestServicesListsNeeds(t *testing.T) {
	code, out, errOut := runCLI(t, "services")
	if code != 0 {
		t.Fatalf("services: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var names []string
	for _, l := range lines {
		names = append(names, strings.Fields(l)[0])
	}
	if want := app.Services(); strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("services lists %v, want %v", names, want)
	}
	want := "reports    needs contacts, inventory, orders"
	if !strings.Contains("\n"+out, "\n"+want+"\n") {
		t.Errorf("services output %q lacks the line %q", out, want)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 1 && len(app.Needs[f[0]]) > 0 {
			t.Errorf("line %q does not say what %s needs", l, f[0])
		}
	}
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	addr := "--auth-addr=" + c.GRPCAddr

	code, out, errOut := runCLI(t, "admin", "tenant", "create", "--name", "Friends of the Library", "--features", "api-access:enabled,webhooks:enabled", addr)
	if code != 0 {
		t.Fatalf("tenant create: exit %d: %s", code, errOut)
	}
	tenant := decodeObject(t, out)
	for _, k := range []string{"id", "name", "slug", "active", "features"} {
		if _, ok := tenant[k]; !ok {
			t.Errorf("tenant create output lacks %q: %s", k, out)
		}
	}
	if tenant["slug"] != "friends-of-the-library" || tenant["active"] != true {
		t.Errorf("tenant = %v", tenant)
	}
	if f := fmt.Sprint(tenant["features"]); f != "[api-access:enabled webhooks:enabled]" {
		t.Errorf("features = %s", f)
	}
	id := tenant["id"].(string)

	code, out, errOut = runCLI(t, "admin", "tenant", "feature", "--tenant", id, "--set", "webhooks:enabled=false", addr)
	if code != 0 || fmt.Sprint(decodeObject(t, out)["features"]) != "[api-access:enabled]" {
		t.Errorf("feature off: %d %s %s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "admin", "tenant", "deactivate", "--tenant", id, addr)
	if code != 0 || decodeObject(t, out)["active"] != false {
		t.Errorf("deactivate: %d %s", code, out)
	}
	code, out, _ = runCLI(t, "admin", "tenant", "activate", "--tenant", id, addr)
	if code != 0 || decodeObject(t, out)["active"] != true {
		t.Errorf("activate: %d %s", code, out)
	}

	code, out, errOut = runCLI(t, "admin", "key", "create", "--tenant", id, "--name", "boot", "--scopes", "all", "--expires-at", "2099-01-01T00:00:00Z", addr)
	if code != 0 {
		t.Fatalf("key create: %d %s", code, errOut)
	}
	key := decodeObject(t, out)
	for _, k := range []string{"id", "name", "keyPrefix", "plainTextKey", "scopes", "expiresAt"} {
		if _, ok := key[k]; !ok {
			t.Errorf("key create output lacks %q", k)
		}
	}
	if key["expiresAt"] != "2099-01-01T00:00:00Z" || len(key["scopes"].([]any)) < 20 {
		t.Errorf("key = %v", key)
	}
	// The key works against the gateway.
	c.Do(t, "GET", "/api/tenants/"+id+"/api-keys", key["plainTextKey"].(string), nil).Expect(t, http.StatusOK)

	// A tenant's first owner: the invitation's token works once.
	code, out, errOut = runCLI(t, "admin", "user", "invite", "--tenant", id, "--email", "Owner@Example.org", "--role", "owner", addr)
	if code != 0 {
		t.Fatalf("user invite: %d %s", code, errOut)
	}
	invited := decodeObject(t, out)
	if len(invited) != 2 || invited["userId"] == nil || invited["invitationToken"] == nil {
		t.Fatalf("user invite output %s", out)
	}
	apptest.RegisterSecret(invited["invitationToken"].(string))
	accept := map[string]any{"token": invited["invitationToken"], "password": "copper kettle 19 ravine", "firstName": "O", "lastName": "W"}
	c.Do(t, "POST", "/api/auth/invitations/accept", "", accept).Expect(t, http.StatusOK)
	c.Do(t, "POST", "/api/auth/invitations/accept", "", accept).Expect(t, http.StatusBadRequest)

	errCases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"admin", "user", "invite", "--tenant", id, addr}, 2, "--email are required"},
		{[]string{"admin", "user", "invite", "--tenant", id, "--email", "x@example.org", "--role", "boss", addr}, 1, "Role must be one of"},
		{[]string{"admin", "tenant", "create", addr}, 2, "--name is required"},
		{[]string{"admin", "tenant", "create", "--name", "X", "--features", "nope:enabled", addr}, 1, "not a known feature"},
		{[]string{"admin", "tenant", "create", "--name", "Again", "--slug", "friends-of-the-library", addr}, 1, "already taken"},
		{[]string{"admin", "tenant", "feature", "--tenant", id, "--set", "webhooks:enabled", addr}, 2, "NAME=true|false"},
		{[]string{"admin", "tenant", "deactivate", "--tenant", "00000000-0000-0000-0000-000000000000", addr}, 1, "not found"},
		{[]string{"admin", "key", "create", "--tenant", id, "--name", "k", "--scopes", "contacts:explode", addr}, 1, "not a known scope"},
		{[]string{"admin", "key", "create", "--tenant", id, "--name", "k", "--scopes", "all", "--expires-at", "soon", addr}, 2, "RFC 3339"},
		{[]string{"admin", "key", "create", "--tenant", "00000000-0000-0000-0000-000000000000", "--name", "k", "--scopes", "all", addr}, 1, "not found"},
		{[]string{"admin", "nothing", "here"}, 2, "unknown admin command"},
		{[]string{"admin", "tenant", "create", "--name", "X", "--auth-addr=127.0.0.1:1"}, 1, "unavailable"},
	}
	for _, ec := range errCases {
		code, out, errOut := runCLI(t, ec.args...)
		if code != ec.code || out != "" || !strings.Contains(errOut, ec.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", ec.args, code, out, errOut, ec.code, ec.msg)
		}
	}
}

func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t, app.AllMigrations()...)
	var tenantOut string
	child := startOnFreePorts(t, 2, func(addrs []string) []string {
		return []string{"ALMONER_TEST_RUN_MAIN=" + strings.Join([]string{"serve", "--http-addr=" + addrs[0], "--grpc-addr=" + addrs[1]}, "\x1f"),
			"DATABASE_URL=" + dbURL, "ALMONER_MIGRATE=false", "ALMONER_METRICS_ADDR=off"}
	}, func(addrs []string) bool {
		// The gRPC listener can be up before the HTTP one: the request
		// below needs both.
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addrs[0]+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		code, out, _ := runCLI(t, "admin", "tenant", "create", "--name", "Shutdown", "--auth-addr="+addrs[1])
		if code == 0 {
			tenantOut = out
		}
		return code == 0
	})
	cmd, logs, exited := child.cmd, child.logs, child.exited
	httpAddr, addr := child.addrs[0], "--auth-addr="+child.addrs[1]
	tid := decodeObject(t, tenantOut)["id"].(string)
	_, keyOut, _ := runCLI(t, "admin", "key", "create", "--tenant", tid, "--name", "k", "--scopes", "all", addr)
	key := decodeObject(t, keyOut)["plainTextKey"].(string)

	// A request whose body is still arriving when SIGTERM comes. It asks
	// for 100 Continue, which the server sends when the handler first
	// reads the body: then the request is in flight, whatever the load (a
	// fixed 300 ms was not always enough for the connection to be
	// accepted, and a connection still in the listen queue at SIGTERM is
	// refused).
	pr, pw := io.Pipe()
	inFlight := make(chan struct{})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got100Continue: func() { close(inFlight) }})
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+httpAddr+"/api/tenants/"+tid+"/api-keys", pr)
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{0, err}
			return
		}
		_ = resp.Body.Close()
		done <- result{resp.StatusCode, nil}
	}()
	select {
	case <-inFlight:
	case r := <-done:
		t.Fatalf("the request ended before its body was read: status %d, err %v", r.status, r.err)
	case <-time.After(time.Minute):
		t.Fatal("the server did not start reading the request's body within a minute")
	}
	if _, err := pw.Write([]byte(`{"name": "in flight", `)); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The rest of the body comes once the shutdown has closed the
	// listener: new connections are refused.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", httpAddr)
		if err != nil {
			break
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the server still accepts connections a minute after SIGTERM: %s", logs.String())
		}
	}
	if _, err := pw.Write([]byte(`"scopes": ["contacts:view"]}`)); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()

	select {
	case r := <-done:
		if r.err != nil || r.status != http.StatusCreated {
			t.Errorf("in-flight request: status %d, err %v", r.status, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("in-flight request never finished")
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not exit after SIGTERM")
	}
	// New connections are refused once it has gone.
	if resp, err := apptest.Get(t.Context(), nil, "http://"+httpAddr+"/"); err == nil {
		_ = resp.Body.Close()
		t.Error("server still accepts connections")
	}
}

// TestServeMetricsOnItsOwnListener runs `almoner serve --target=gateway`
// as an operator would: /metrics answers on ALMONER_METRICS_ADDR and is a
// 404 on the API port, where the probes' /healthz stays.
func TestServeMetricsOnItsOwnListener(t *testing.T) {
	t.Parallel()
	get := func(url string) (int, string) {
		resp, err := apptest.Get(t.Context(), nil, url)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	child := startOnFreePorts(t, 2, func(addrs []string) []string {
		return []string{"ALMONER_TEST_RUN_MAIN=" + strings.Join([]string{"serve", "--target=gateway", "--http-addr=" + addrs[0]}, "\x1f"),
			// The gateway dials lazily: no auth service is needed to start.
			"ALMONER_AUTH_ADDR=127.0.0.1:1", "ALMONER_METRICS_ADDR=" + addrs[1]}
	}, func(addrs []string) bool {
		code, _ := get("http://" + addrs[0] + "/healthz")
		return code == http.StatusOK
	})
	logs := child.logs
	httpAddr, metricsAddr := child.addrs[0], child.addrs[1]
	if code, body := get("http://" + metricsAddr + "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics on ALMONER_METRICS_ADDR: %d %.200s", code, body)
	}
	if code, body := get("http://" + httpAddr + "/metrics"); code != http.StatusNotFound || strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics on the API port: %d %.200s", code, body)
	}
	if !strings.Contains(logs.String(), `"metrics_addr":"`+metricsAddr+`"`) {
		t.Errorf("the start-up line does not name the metrics address: %s", logs.String())
	}
}

// portChild is a child process of the test binary serving on ports that
// were free a moment before it started.
type portChild struct {
	cmd    *exec.Cmd
	logs   *apptest.SyncBuffer
	exited chan error
	addrs  []string
}

// startOnFreePorts starts a child of the test binary with env(addrs) on n
// fresh loopback addresses and returns once ready(addrs) holds (polled
// for 30 s). A port can be taken between FreeAddr and the child's
// listening (another test's listener, the local end of a connection): when
// the child exits saying so, it starts again on new ports, 5 times at most.
// The child is killed when the test ends.
func startOnFreePorts(t *testing.T, n int, env func(addrs []string) []string, ready func(addrs []string) bool) *portChild {
	t.Helper()
launches:
	for launch := 1; ; launch++ {
		c := &portChild{logs: &apptest.SyncBuffer{}, exited: make(chan error, 1)}
		for range n {
			c.addrs = append(c.addrs, apptest.FreeAddr(t))
		}
		c.cmd = exec.CommandContext(t.Context(), os.Args[0])
		c.cmd.Env = append(os.Environ(), env(c.addrs)...)
		c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { c.exited <- c.cmd.Wait() }()
		t.Cleanup(func() { _ = c.cmd.Process.Kill() })
		deadline := time.Now().Add(30 * time.Second)
		for !ready(c.addrs) {
			select {
			case err := <-c.exited:
				if strings.Contains(c.logs.String(), "address already in use") && launch < 5 {
					t.Logf("a port was taken before the server listened; starting again on others: %s", c.logs.String())
					continue launches
				}
				t.Fatalf("server exited: %v\n%s", err, c.logs.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("server did not come up: %s", c.logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return c
	}
}
