package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestClients runs the published clients (docs/clients.md) against one
// live cluster, whose every exchange with them goes through the contract
// checker (clientEnv):
//
//   - go: the recipe flows of tests/goclient over clients/go, the client
//     oapi-codegen generated (pinned in clients/go/go.mod), built as an
//     integrator's module builds it (GOWORK=off); clients/go's unit tests;
//     and its README quick start, clients/go/examples/quickstart.
//   - typescript: types generated from the served /openapi.json with
//     openapi-typescript into a copy of tests/tsclient, client.ts checked
//     against them with tsc and run under Node (the same flows); then
//     clients/typescript built with tsc, its tests (node --test, the
//     webhook verifier against a delivery this server signed) and its
//     quick start, examples/quickstart.ts.
//
// Both quick starts check the signature of a real delivery: the test
// registers an endpoint on a local receiver, records the contact.created
// it gets, and hands it to them (ALMONER_WEBHOOK_DELIVERY).
func TestClients(t *testing.T) {
	if os.Getenv("ALMONER_E2E_SPLIT") != "" {
		// The clients see only the gateway's HTTP, the same in both
		// passes; building and running them twice would add two minutes.
		t.Skip("the clients talk to the gateway only; covered by the first pass")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		missingTool(t, "needs the go command on PATH")
	}
	nodeBin, nodeErr := exec.LookPath("node")
	if nodeErr != nil {
		missingTool(t, "needs node on PATH")
	}
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tests/tsclient", "clients/typescript"} {
		if _, err := os.Stat(filepath.Join(repo, d, "node_modules", ".bin", "tsc")); err != nil {
			missingTool(t, "needs "+d+"/node_modules (npm ci in "+d+")")
		}
	}
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	// Each client its own tenant: the flows count the contacts they made.
	// The delivery each verifies is recorded once its builds are done,
	// right before it runs: the verifiers refuse a timestamp more than 5
	// minutes old, and under load a subtest can wait that long for a slot
	// (-parallel) and its builds.
	var (
		mu       sync.Mutex
		recorded int
	)
	newEnv := func(t *testing.T) []string {
		mu.Lock()
		defer mu.Unlock()
		recorded++
		delivery := recordDelivery(t, c, c.NewTenant(t, "api-access:enabled", "webhooks:enabled"), rc, recorded)
		tenant := c.NewTenant(t, "api-access:enabled", "payment-processor:enabled")
		return append(clientEnv(t, c, tenant), "ALMONER_WEBHOOK_DELIVERY="+delivery)
	}

	t.Run("go", func(t *testing.T) {
		t.Parallel()
		// The modules are the folders' own (GOWORK=off): the client builds
		// against what clients/go/go.mod pins, as in an integrator's module.
		goEnv := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
		flows := filepath.Join(repo, "tests", "goclient")
		bin := filepath.Join(t.TempDir(), "goclient")
		run(t, flows, goEnv, goBin, "vet", "./...")
		run(t, flows, goEnv, goBin, "build", "-o", bin, ".")
		client := filepath.Join(repo, "clients", "go")
		run(t, client, goEnv, goBin, "vet", "./...")
		run(t, client, goEnv, goBin, "build", "./...")
		env := newEnv(t)
		if out := run(t, flows, append(goEnv, env...), bin); !strings.Contains(out, "every flow passed") {
			t.Fatalf("goclient ran no flow:\n%s", out)
		}
		run(t, client, goEnv, goBin, "test", "-count=1", "./...")
		out := run(t, client, append(goEnv, env...), goBin, "run", "./examples/quickstart")
		if !strings.Contains(out, "webhook contact.created verified") || !strings.Contains(out, "quickstart: done") {
			t.Fatalf("clients/go quick start:\n%s", out)
		}
	})
	t.Run("typescript", func(t *testing.T) {
		t.Parallel()
		src := filepath.Join(repo, "tests", "tsclient")
		bin := filepath.Join(src, "node_modules", ".bin")
		dir := t.TempDir()
		copyFiles(t, src, dir, "package.json", "tsconfig.json", "client.ts")
		// Node resolves openapi-fetch from the folder of the running file up.
		if err := os.Symlink(filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		writeDocument(t, c, dir)
		run(t, dir, os.Environ(), filepath.Join(bin, "openapi-typescript"), "openapi.json", "-o", "schema.d.ts")
		run(t, dir, os.Environ(), filepath.Join(bin, "tsc"), "-p", ".")
		pkg := filepath.Join(repo, "clients", "typescript")
		out := t.TempDir()
		if err := os.Symlink(filepath.Join(pkg, "node_modules"), filepath.Join(out, "node_modules")); err != nil {
			t.Fatal(err)
		}
		dist := filepath.Join(out, "dist")
		run(t, pkg, os.Environ(), filepath.Join(pkg, "node_modules", ".bin", "tsc"), "-p", ".", "--outDir", dist)
		env := newEnv(t)
		if flows := run(t, dir, append(os.Environ(), env...), nodeBin, filepath.Join("out", "client.js")); !strings.Contains(flows, "every flow passed") {
			t.Fatalf("tsclient ran no flow:\n%s", flows)
		}

		// The package, built out of the source tree above.
		tests := run(t, out, append(os.Environ(), env...), nodeBin, "--test", filepath.Join(dist, "test"))
		if !strings.Contains(tests, "# fail 0") || !strings.Contains(tests, "# skipped 0") {
			t.Fatalf("clients/typescript tests:\n%s", tests)
		}
		quick := run(t, out, append(os.Environ(), env...), nodeBin, filepath.Join(dist, "examples", "quickstart.js"))
		if !strings.Contains(quick, "webhook contact.created verified") || !strings.Contains(quick, "quickstart: done") {
			t.Fatalf("clients/typescript quick start:\n%s", quick)
		}
	})
}

// recordDelivery registers an endpoint of tenant on rc, makes a contact,
// and writes the contact.created delivery rc got, with the endpoint's
// secret, to a file: {"secret", "headers", "body"}, as a receiver has it.
// It is the nth delivery rc gets.
func recordDelivery(t *testing.T, c *apptest.Cluster, tenant apptest.Tenant, rc *receiver, nth int) string {
	t.Helper()
	_, secret := createWebhook(t, c, tenant, rc.srv.URL+"/hook", "contact.created")
	c.Do(t, "POST", "/api/tenants/"+tenant.ID+"/contacts", tenant.Key, map[string]any{"contactType": "Individual", "lastName": "Hooked"}).Expect(t, http.StatusCreated)
	got := rc.waitFor(t, nth)[nth-1]
	headers := map[string]string{}
	for k := range got.header {
		headers[k] = got.header.Get(k)
	}
	b, err := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(got.body)})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "delivery.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// missingTool fails a test that lacks a tool: a test that skips reports
// nothing, and `make test` installs what the tests need (make test-deps)
// or stops naming what is missing, so a missing tool here is a broken
// machine (issue 35: a fresh clone skipped the client and browser tests
// without a word).
func missingTool(t *testing.T, msg string) {
	t.Helper()
	t.Fatal(msg + " (make test-deps installs it, or says what is missing)")
}

func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeDocument saves the /openapi.json the gateway serves, the one an
// integrator downloads, as dir/openapi.json.
func writeDocument(t *testing.T, c *apptest.Cluster, dir string) {
	t.Helper()
	resp := c.Do(t, "GET", "/openapi.json", "", nil).Expect(t, http.StatusOK)
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), resp.Body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// clientEnv points a client program at a proxy in front of the gateway
// whose transport is apptest's: every exchange of the generated client is
// checked against the document too (apptest/contract.go).
func clientEnv(t *testing.T, c *apptest.Cluster, tenant apptest.Tenant) []string {
	t.Helper()
	target, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		Transport: c.HTTP.Transport,
	})
	t.Cleanup(proxy.Close)
	return []string{"ALMONER_URL=" + proxy.URL, "ALMONER_TENANT=" + tenant.ID, "ALMONER_KEY=" + tenant.Key}
}

// run runs a command in dir and returns its output, failing the test with
// the output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return out.String()
}
