package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
)

func writeRunFile(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, runFileName)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveAuthTarget(t *testing.T) {
	t.Parallel()
	withRun := t.TempDir()
	runFile := writeRunFile(t, withRun, `{"grpcAddr":"0.0.0.0:9393","httpAddr":":8080","pid":42}`)
	broken := t.TempDir()
	writeRunFile(t, broken, `not json`)
	empty := t.TempDir()
	cases := []struct {
		name         string
		env          map[string]string
		addr, source string
	}{
		{"auth address first", map[string]string{"ALMONER_AUTH_ADDR": "10.0.0.5:9101", "ALMONER_GRPC_ADDR": "127.0.0.1:9191", "ALMONER_DATA_DIR": withRun}, "10.0.0.5:9101", "ALMONER_AUTH_ADDR"},
		{"grpc address next", map[string]string{"ALMONER_GRPC_ADDR": ":9191", "ALMONER_DATA_DIR": withRun}, "127.0.0.1:9191", "ALMONER_GRPC_ADDR"},
		{"make run's data folder", map[string]string{"ALMONER_DATA_DIR": withRun}, "127.0.0.1:9393", runFile},
		{"no run file", map[string]string{"ALMONER_DATA_DIR": empty}, defaultAuthAddr, "default"},
		{"unreadable run file", map[string]string{"ALMONER_DATA_DIR": broken}, defaultAuthAddr, "default"},
		{"IPv6 wildcard", map[string]string{"ALMONER_GRPC_ADDR": "[::]:9090"}, "[::1]:9090", "ALMONER_GRPC_ADDR"},
	}
	for _, c := range cases {
		got := resolveAuthTarget(config.Overlay(c.env, nil))
		if got.addr != c.addr || got.source != c.source {
			t.Errorf("%s: got %s from %s, want %s from %s", c.name, got.addr, got.source, c.addr, c.source)
		}
	}
	if got := resolveAuthTarget(config.Overlay(nil, nil)); got.runFile != filepath.Join(".data", runFileName) {
		t.Errorf("default data folder run file = %q", got.runFile)
	}
}

// TestAdminFindsMakeRunsServer runs admin commands as from a fresh shell:
// no ALMONER_AUTH_ADDR, ALMONER_GRPC_ADDR or ALMONER_INTERNAL_KEY, only
// the data folder where make run recorded its server and keeps its
// internal key. One that has stopped, or none at all, is an error naming
// the address, where it came from and what to set; so is a missing key
// file, and a key the server does not sign with.
func TestAdminFindsMakeRunsServer(t *testing.T) {
	key := authctx.NewKeyHex()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{authctx.KeyVar: key}})
	data := t.TempDir()
	t.Setenv("ALMONER_AUTH_ADDR", "")
	t.Setenv("ALMONER_GRPC_ADDR", "")
	t.Setenv(authctx.KeyVar, "")
	t.Setenv("ALMONER_DATA_DIR", data)
	const nobody = "00000000-0000-0000-0000-000000000000"

	runFile := writeRunFile(t, data, `{"grpcAddr":"`+c.GRPCAddr+`"}`)
	keyFile := filepath.Join(data, internalKeyFileName)
	code, out, errOut := runCLI(t, "admin", "tenant", "get", "--tenant", nobody)
	for _, want := range []string{authctx.KeyVar + " is not set and there is no " + keyFile, "make run keeps its key in " + keyFile, "ALMONER_DATA_DIR"} {
		if code != 1 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("no key: exit %d, stdout %q, stderr %q; want it to mention %q", code, out, errOut, want)
		}
	}
	// Another deployment's key: the server refuses the signature.
	writeKeyFile(t, keyFile, authctx.NewKeyHex())
	code, _, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody)
	for _, want := range []string{"unauthenticated", "refused this command's signature", "the internal key from " + keyFile, "set " + authctx.KeyVar} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("another key: exit %d, stderr %q; want it to mention %q", code, errOut, want)
		}
	}
	writeKeyFile(t, keyFile, key)
	code, out, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody)
	if code != 1 || out != "" || !strings.Contains(errOut, "not found") {
		t.Errorf("through the run file: exit %d, stdout %q, stderr %q; want the server's not found", code, out, errOut)
	}

	stopped := refusingAddr(t)
	writeRunFile(t, data, `{"grpcAddr":"`+stopped+`"}`)
	code, _, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody)
	for _, want := range []string{"unavailable", "no auth service answers at " + stopped, "recorded in " + runFile + " by make run", "make run has stopped", "ALMONER_AUTH_ADDR"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("stopped server: exit %d, stderr %q; want it to mention %q", code, errOut, want)
		}
	}

	code, _, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody, "--auth-addr", stopped)
	if code != 1 || !strings.Contains(errOut, "no auth service answers at "+stopped+" (given with --auth-addr)") {
		t.Errorf("--auth-addr: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("ALMONER_GRPC_ADDR", stopped)
	code, _, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody)
	if code != 1 || !strings.Contains(errOut, "no auth service answers at "+stopped+" (from ALMONER_GRPC_ADDR)") {
		t.Errorf("ALMONER_GRPC_ADDR: exit %d, stderr %q", code, errOut)
	}
	// An explicit --auth-addr wins over the environment.
	code, _, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody, "--auth-addr", c.GRPCAddr)
	if code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("--auth-addr over ALMONER_GRPC_ADDR: exit %d, stderr %q", code, errOut)
	}
	// ALMONER_INTERNAL_KEY wins over the data folder's file.
	t.Setenv(authctx.KeyVar, authctx.NewKeyHex())
	code, _, errOut = runCLI(t, "admin", "tenant", "get", "--tenant", nobody, "--auth-addr", c.GRPCAddr)
	if code != 1 || !strings.Contains(errOut, "the internal key from "+authctx.KeyVar+" is not") {
		t.Errorf("%s over the key file: exit %d, stderr %q", authctx.KeyVar, code, errOut)
	}
}

// refusingAddr returns a loopback address where connections are refused
// for the rest of the test, as at a server that has stopped: its port is
// bound by a socket that never listens, so no other test's listener (nor
// the local end of a connection) can take it meanwhile, as one could take
// a port that was merely free a moment ago.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

// writeKeyFile writes a key file as scripts/internal-key.sh does.
func writeKeyFile(t *testing.T, path, key string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUnreachableMessageWithoutRunFile is the message of a fresh shell
// that finds nothing at all: it says to start make run, to carry over
// ALMONER_DATA_DIR, or to set ALMONER_AUTH_ADDR.
func TestUnreachableMessageWithoutRunFile(t *testing.T) {
	t.Parallel()
	tg := resolveAuthTarget(config.Overlay(map[string]string{"ALMONER_DATA_DIR": "/nowhere"}, nil))
	msg := unreachableError{target: tg, cause: "connection refused"}.Error()
	for _, want := range []string{"no auth service answers at 127.0.0.1:9090", "the default", "/nowhere/run.json", "make run", "ALMONER_DATA_DIR", "ALMONER_AUTH_ADDR", "connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
