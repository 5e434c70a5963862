package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/cmd/almoner/internal/app"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/pkg/webhook"
)

// served is an `almoner serve` child process of the test binary.
type served struct {
	t        *testing.T
	cmd      *exec.Cmd
	logs     *apptest.SyncBuffer
	exited   chan error
	httpAddr string
	grpcAddr string
	env      []string
	args     []string
	launches int
}

// startServe runs `almoner serve args…` in a child with env added to the
// test's environment, and waits until it answers (ready) or exits.
func startServe(t *testing.T, ready bool, env []string, args ...string) *served {
	t.Helper()
	s := &served{t: t, env: env, args: args}
	s.launch()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("serve %v logs:\n%s", args, s.logs.String())
		}
	})
	if !ready {
		return s
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The services' gRPC listener opens before the gateway's HTTP one:
		// ready is both answering.
		code, _, errOut := runCLI(t, "admin", "tenant", "get", "--tenant", "00000000-0000-0000-0000-000000000000", "--auth-addr="+s.grpcAddr)
		if code == 1 && strings.Contains(errOut, "not found") && s.httpUp() {
			return s
		}
		select {
		case err := <-s.exited:
			if s.relaunchedAfterPortTaken() {
				deadline = time.Now().Add(30 * time.Second)
				continue
			}
			t.Fatalf("serve exited: %v\n%s", err, s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %s", s.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// launch starts the process on ports that are free a moment before.
func (s *served) launch() {
	s.t.Helper()
	s.launches++
	s.logs, s.exited = &apptest.SyncBuffer{}, make(chan error, 1)
	s.httpAddr, s.grpcAddr = apptest.FreeAddr(s.t), apptest.FreeAddr(s.t)
	cmd := exec.CommandContext(s.t.Context(), os.Args[0])
	cmd.Env = append(append(os.Environ(),
		"ALMONER_TEST_RUN_MAIN="+strings.Join(append([]string{"serve", "--http-addr=" + s.httpAddr, "--grpc-addr=" + s.grpcAddr}, s.args...), "\x1f"),
		"ALMONER_MIGRATE=false", "ALMONER_METRICS_ADDR=off", "ALMONER_LOG_FORMAT=json"), s.env...)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := s.exited
	go func() { exited <- cmd.Wait() }()
	s.cmd = cmd
}

// relaunchedAfterPortTaken starts the process again on new ports when it
// exited because one of its ports was taken between FreeAddr and its
// listening (by another test's listener or the local end of a connection),
// a few times at most; it reports whether it did.
func (s *served) relaunchedAfterPortTaken() bool {
	s.t.Helper()
	if !strings.Contains(s.logs.String(), "address already in use") || s.launches >= 5 {
		return false
	}
	s.t.Logf("serve: a port was taken before it listened; starting again on others: %s", s.logs.String())
	s.launch()
	return true
}

// httpUp reports whether the process's gateway answers its liveness probe.
func (s *served) httpUp() bool {
	resp, err := apptest.Get(s.t.Context(), nil, "http://"+s.httpAddr+"/healthz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends SIGTERM and waits for a clean exit.
func (s *served) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Fatalf("exit: %v\n%s", err, s.logs.String())
		}
	case <-time.After(30 * time.Second):
		s.t.Fatal("serve did not exit after SIGTERM")
	}
}

// do sends a JSON request to the process's gateway and decodes the answer.
func (s *served) do(method, path, key string, body any, wantStatus int) map[string]any {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(s.t.Context(), method, "http://"+s.httpAddr+path, rd)
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, wantStatus)
	}
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	return m
}

// TestDataFolderKeepsTheSealingKey: make run's key is made once per data
// folder, readable by its owner only, and the same on every later start.
func TestDataFolderKeepsTheSealingKey(t *testing.T) {
	t.Parallel()
	checkDataFolderKey(t, "secret-key.sh", "secret-key", func(k string) error { _, err := secretbox.ParseKey(k); return err })
}

// TestDataFolderKeepsTheInternalKey: likewise make run's internal key,
// which admin commands read from the same file.
func TestDataFolderKeepsTheInternalKey(t *testing.T) {
	t.Parallel()
	checkDataFolderKey(t, "internal-key.sh", internalKeyFileName, func(k string) error { _, err := authctx.ParseKey(k); return err })
}

// checkDataFolderKey runs scripts/<script> on two data folders: a key that
// parses, kept in <data>/<file> with mode 0600, the same on a second run,
// another in another folder.
func checkDataFolderKey(t *testing.T, script, file string, parse func(string) error) {
	data := filepath.Join(t.TempDir(), "data")
	read := func(data string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "../../scripts/"+script)
		cmd.Env = append(os.Environ(), "ALMONER_DATA_DIR="+data)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return strings.TrimSpace(string(out))
	}
	first := read(data)
	if err := parse(first); err != nil {
		t.Fatalf("key %q: %v", first, err)
	}
	if again := read(data); again != first {
		t.Errorf("second start got another key")
	}
	fi, err := os.Stat(filepath.Join(data, file))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if other := read(filepath.Join(t.TempDir(), "other")); other == first {
		t.Errorf("another data folder got the same key")
	}
}

// TestServeRequiresASharedSealingKey: only a sandbox process that runs
// everything may start without ALMONER_WEBHOOK_SECRET_KEY; any other
// process that seals secrets refuses, saying how to set one.
func TestServeRequiresASharedSealingKey(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t, app.AllMigrations()...)
	noKey := []string{"DATABASE_URL=" + dbURL, secretbox.KeyVar + "="}
	for _, tc := range []struct {
		env  []string
		args []string
		msg  string
	}{
		{nil, []string{"--target=webhooks"}, "--target=webhooks: " + secretbox.KeyVar + " is not set"},
		{nil, []string{"--target=auth,gateway"}, "--target=auth,gateway: " + secretbox.KeyVar + " is not set"},
		{[]string{"ALMONER_ENVIRONMENT=production"}, nil, "production always needs one"},
		{[]string{secretbox.KeyVar + "=short"}, []string{"--target=auth"}, "want 32 bytes in base64"},
	} {
		s := startServe(t, false, append(append([]string{}, noKey...), tc.env...), tc.args...)
		select {
		case err := <-s.exited:
			logs := s.logs.String()
			if err == nil || !strings.Contains(logs, tc.msg) {
				t.Errorf("%v %v: exit %v, output %s; want a failure saying %q", tc.env, tc.args, err, logs, tc.msg)
			}
			if !strings.Contains(tc.msg, "32 bytes") && !strings.Contains(logs, "openssl rand -base64 32") {
				t.Errorf("%v %v: the message does not say how to make a key: %s", tc.env, tc.args, logs)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%v %v: still running without a usable key", tc.env, tc.args)
		}
	}
	// A contacts-only process seals nothing and needs no key.
	s := startServe(t, false, noKey, "--target=contacts")
	s.waitServing()
	s.stop()
}

// TestSealingKeySurvivesRestart registers a webhook endpoint, restarts the
// process with the same key on the same database, and has the new process
// deliver an event whose signature verifies with the secret the first one
// returned. A third start without the key (a random one) cannot open the
// secret: the delivery is a failed one with a clear error, and the log
// says why.
func TestSealingKeySurvivesRestart(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t, app.AllMigrations()...)
	type request struct {
		header http.Header
		body   []byte
	}
	got := make(chan request, 16)
	rc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- request{r.Header.Clone(), b}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATABASE_URL=" + dbURL, "ALMONER_WEBHOOK_ALLOW_PRIVATE=true", "ALMONER_WEBHOOK_CA_FILE=" + ca,
		"ALMONER_WEBHOOK_TICK=50ms", "ALMONER_WEBHOOK_RETRY_BASE=1h"}
	withKey := append(append([]string{}, env...), secretbox.KeyVar+"="+secretbox.NewKey())

	first := startServe(t, true, withKey)
	auth := "--auth-addr=" + first.grpcAddr
	code, out, errOut := runCLI(t, "admin", "tenant", "create", "--name", "Restart", "--features", "api-access:enabled,webhooks:enabled", auth)
	if code != 0 {
		t.Fatalf("tenant create: %s", errOut)
	}
	tid := decodeObject(t, out)["id"].(string)
	_, out, _ = runCLI(t, "admin", "key", "create", "--tenant", tid, "--name", "k", "--scopes", "all", auth)
	key := decodeObject(t, out)["plainTextKey"].(string)
	hook := first.do("POST", "/api/tenants/"+tid+"/webhooks", key,
		map[string]any{"name": "restart", "url": rc.URL + "/hook", "eventTypes": []string{"contact.created"}}, http.StatusCreated)
	secret, hookID := hook["secret"].(string), hook["id"].(string)
	first.stop()

	second := startServe(t, true, withKey)
	second.do("POST", "/api/tenants/"+tid+"/contacts", key, map[string]any{"contactType": "Individual", "firstName": "Ada", "lastName": "After"}, http.StatusCreated)
	select {
	case r := <-got:
		if err := webhook.Verify(secret, r.header.Get(webhook.HeaderSignature), r.header.Get(webhook.HeaderTimestamp), r.body, 5*time.Minute); err != nil {
			t.Errorf("the delivery after the restart does not verify with the secret from before it: %v", err)
		}
		if ev := r.header.Get(webhook.HeaderEvent); ev != "contact.created" {
			t.Errorf("event %q", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("nothing delivered after the restart: %s", second.logs.String())
	}
	second.stop()

	// Without the key: a random one, which cannot open the secret.
	third := startServe(t, true, append(append([]string{}, env...), secretbox.KeyVar+"="))
	if !strings.Contains(third.logs.String(), secretbox.KeyVar+" is not set") {
		t.Errorf("no warning about the random key: %s", third.logs.String())
	}
	test := third.do("POST", "/api/tenants/"+tid+"/webhooks/"+hookID+"/test", key, nil, http.StatusOK)
	const unsealable = "signing secret cannot be unsealed with the server's current key; re-create the endpoint for a new secret"
	if test["success"] != false || test["error"] != unsealable {
		t.Errorf("test delivery = %v, want a failure %q", test, unsealable)
	}
	third.do("POST", "/api/tenants/"+tid+"/contacts", key, map[string]any{"contactType": "Individual", "firstName": "Bo", "lastName": "Random"}, http.StatusCreated)
	deadline := time.Now().Add(30 * time.Second)
	for {
		page := third.do("GET", "/api/tenants/"+tid+"/webhooks/"+hookID+"/deliveries", key, nil, http.StatusOK)
		var failed map[string]any
		for _, it := range page["items"].([]any) {
			if d := it.(map[string]any); d["eventType"] == "contact.created" && d["success"] == false {
				failed = d
			}
		}
		if failed != nil {
			if failed["error"] != unsealable {
				t.Errorf("failed delivery = %v", failed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed contact.created delivery: %v\n%s", page, third.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if logs := third.logs.String(); !strings.Contains(logs, "cannot be unsealed") || !strings.Contains(logs, hookID) {
		t.Errorf("no log line naming the endpoint: %s", logs)
	}
	select {
	case r := <-got:
		t.Errorf("a request reached the receiver without a usable secret: %s", r.body)
	default:
	}
	third.stop()
}

// waitServing waits for the process's "almoner serving" line.
func (s *served) waitServing() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.logs.String(), "almoner serving") {
		select {
		case err := <-s.exited:
			if s.relaunchedAfterPortTaken() {
				deadline = time.Now().Add(30 * time.Second)
				continue
			}
			s.t.Fatalf("exited: %v %s", err, s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("did not start: %s", s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRequiresTheInternalKey: every process signs and verifies its
// internal calls with ALMONER_INTERNAL_KEY. Only a sandbox process that
// runs everything may start without it, with a random key that no admin
// command knows (its calls are refused, saying which key to set); any
// other process refuses to start, saying how to make one, and so does a
// malformed key.
func TestServeRequiresTheInternalKey(t *testing.T) {
	t.Parallel()
	dbURL := testdb.New(t, app.AllMigrations()...)
	sealing := secretbox.KeyVar + "=" + secretbox.NewKey()
	noKey := []string{"DATABASE_URL=" + dbURL, sealing, authctx.KeyVar + "="}
	for _, tc := range []struct {
		env  []string
		args []string
		msg  string
	}{
		{nil, []string{"--target=contacts"}, "--target=contacts: " + authctx.KeyVar + " is not set"},
		{nil, []string{"--target=gateway"}, "--target=gateway: " + authctx.KeyVar + " is not set"},
		{nil, []string{"--target=auth,contacts,inventory,orders,reports,webhooks"}, authctx.KeyVar + " is not set"},
		{[]string{"ALMONER_ENVIRONMENT=production"}, nil, "production always needs one"},
		{[]string{authctx.KeyVar + "=abcd"}, []string{"--target=contacts"}, "want at least 32 random bytes in hex"},
	} {
		s := startServe(t, false, append(append([]string{}, noKey...), tc.env...), tc.args...)
		select {
		case err := <-s.exited:
			logs := s.logs.String()
			if err == nil || !strings.Contains(logs, tc.msg) || !strings.Contains(logs, "openssl rand -hex 32") {
				t.Errorf("%v %v: exit %v, output %s; want a failure saying %q and how to make a key", tc.env, tc.args, err, logs, tc.msg)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%v %v: still running without a usable key", tc.env, tc.args)
		}
	}
	// A sandbox process running everything starts with a key of its own;
	// the admin command (this process's key) is refused and told so.
	s := startServe(t, false, noKey)
	s.waitServing()
	if !strings.Contains(s.logs.String(), authctx.KeyVar+" is not set: this process signs its internal calls with a random key") {
		t.Errorf("no warning about the random key: %s", s.logs.String())
	}
	code, _, errOut := runCLI(t, "admin", "tenant", "get", "--tenant", "00000000-0000-0000-0000-000000000000", "--auth-addr="+s.grpcAddr)
	if code != 1 || !strings.Contains(errOut, "refused this command's signature") || !strings.Contains(errOut, "from "+authctx.KeyVar) {
		t.Errorf("admin against a random key: exit %d, stderr %q", code, errOut)
	}
	s.stop()
}
