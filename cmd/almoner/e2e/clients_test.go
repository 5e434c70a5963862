package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestClientGo generates a Go client from the served /openapi.json with
// oapi-codegen (pinned in tests/goclient/go.mod, with the configuration an
// integrator would write, tests/goclient/oapi-codegen.yaml) into a
// temporary copy of tests/goclient, builds tests/goclient/main.go with it
// and runs it: a key, a contact, a fund, a cash gift, read back, paged, a
// 400 and a 404 (docs/openapi.md, Generated clients).
func TestClientGo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		missingTool(t, "needs the go command on PATH")
	}
	t.Parallel()
	src, err := filepath.Abs("../../../tests/goclient")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFiles(t, src, dir, "go.mod", "go.sum", "oapi-codegen.yaml", "main.go")
	c := apptest.Start(t, apptest.Options{})
	tenant := c.NewTenant(t)
	writeDocument(t, c, dir)

	// The module is the folder's own (GOWORK=off): the generated code builds
	// against what tests/goclient/go.mod pins, as in an integrator's module.
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
	run(t, dir, env, goBin, "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "openapi.json")
	run(t, dir, env, goBin, "vet", "./...")
	run(t, dir, env, goBin, "build", "-o", "goclient", ".")
	out := run(t, dir, append(env, clientEnv(t, c, tenant)...), filepath.Join(dir, "goclient"))
	if !strings.Contains(out, "every flow passed") {
		t.Fatalf("goclient ran no flow:\n%s", out)
	}
}

// TestClientTypeScript generates the types of the served /openapi.json with
// openapi-typescript into a temporary copy of tests/tsclient, checks
// tests/tsclient/client.ts against them with tsc and runs it under Node
// with openapi-fetch (all pinned in tests/tsclient/package-lock.json): the
// same flows as TestClientGo. In CI a missing node or npm ci is a
// failure, not a skip.
func TestClientTypeScript(t *testing.T) {
	src, err := filepath.Abs("../../../tests/tsclient")
	if err != nil {
		t.Fatal(err)
	}
	nodeBin, nodeErr := exec.LookPath("node")
	bin := filepath.Join(src, "node_modules", ".bin")
	_, genErr := os.Stat(filepath.Join(bin, "openapi-typescript"))
	_, tscErr := os.Stat(filepath.Join(bin, "tsc"))
	if nodeErr != nil || genErr != nil || tscErr != nil {
		missingTool(t, "needs node and tests/tsclient/node_modules (npm ci in tests/tsclient)")
	}
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, src, dir, "package.json", "tsconfig.json", "client.ts")
	// Node resolves openapi-fetch from the folder of the running file up.
	if err := os.Symlink(filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	c := apptest.Start(t, apptest.Options{})
	tenant := c.NewTenant(t)
	writeDocument(t, c, dir)

	env := os.Environ()
	run(t, dir, env, filepath.Join(bin, "openapi-typescript"), "openapi.json", "-o", "schema.d.ts")
	run(t, dir, env, filepath.Join(bin, "tsc"), "-p", ".")
	out := run(t, dir, append(env, clientEnv(t, c, tenant)...), nodeBin, filepath.Join("out", "client.js"))
	if !strings.Contains(out, "every flow passed") {
		t.Fatalf("tsclient ran no flow:\n%s", out)
	}
}

// missingTool skips a test that lacks a tool, or fails it in CI, where a
// machine without the tool is a broken machine (.ci/run installs them).
func missingTool(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
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
