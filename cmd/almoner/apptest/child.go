package apptest

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/internal/app"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/telemetry"
)

// childTargetsVar names the --target list of a child process started by
// StartChild; when it is set, RunChildIfRequested turns the test binary
// into that Almoner process.
const childTargetsVar = "ALMONER_APPTEST_CHILD_TARGETS"

// RunChildIfRequested must be called first in TestMain. In a child started
// by StartChild it runs the requested targets from the environment (as
// `almoner serve` would) until SIGTERM, then exits; otherwise it returns.
func RunChildIfRequested() {
	targets := os.Getenv(childTargetsVar)
	if targets == "" {
		return
	}
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stderr, nil)))
	cfg, err := app.FromEnv()
	if err != nil {
		logger.Error("child config", "error", err.Error())
		os.Exit(1)
	}
	cfg.Targets = strings.Split(targets, ",")
	cfg.Logger = logger
	cfg.ServiceConfig = config.Env
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	a, err := app.Start(ctx, cfg)
	if err != nil {
		logger.Error("child start", "error", err.Error())
		os.Exit(1)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(sctx); err != nil {
		logger.Error("child stop", "error", err.Error())
		os.Exit(1)
	}
	os.Exit(0)
}

// Child is an Almoner process started by StartChild.
type Child struct {
	Cmd  *exec.Cmd
	Logs *SyncBuffer
	done chan struct{}
	err  error
}

// Done is closed when the child has exited; any number of waiters may
// read it (the test, and StartChild's cleanup). Err then says how.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is how the child exited (cmd.Wait's answer), once Done is closed.
func (c *Child) Err() error {
	<-c.done
	return c.err
}

// StartChild re-executes the test binary as an Almoner process running
// targets (e.g. "webhooks"), configured by env ("KEY=value" entries such as
// DATABASE_URL, ALMONER_GRPC_ADDR, ALMONER_METRICS_ADDR=off). It is killed
// when the test ends if still running. The test binary's TestMain must call
// RunChildIfRequested.
func StartChild(t testing.TB, targets string, env ...string) *Child {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childTargetsVar+"="+targets, "ALMONER_MIGRATE=false"), env...)
	logs := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("apptest: start child: %v", err)
	}
	c := &Child{Cmd: cmd, Logs: logs, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	registerLogs(logs)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done // "signal: killed": we just killed it
		if t.Failed() {
			t.Logf("child %s logs:\n%s", targets, logs.String())
		}
	})
	return c
}

// SecretsNeverLogged fails (returns a description) when any secret seen in
// a response during the run appears in any log written by any cluster or
// child of the run. TestMain calls it after m.Run.
func SecretsNeverLogged() string {
	secretsMu.Lock()
	defer secretsMu.Unlock()
	var b bytes.Buffer
	for _, logs := range allLogs {
		text := logs.String()
		for s := range secrets {
			if strings.Contains(text, s) {
				b.WriteString("a secret starting " + s[:12] + "… was logged\n")
			}
		}
	}
	return b.String()
}
