package stripeproc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests of requests run against stripe-mock, Stripe's own mock, which
// checks every request against Stripe's OpenAPI spec and answers 400 to
// an unknown or malformed parameter. `make tools` installs the pinned
// version into bin/; STRIPE_MOCK_BIN names another binary.

// stripeMock is the one stripe-mock of this test binary, started by the
// first test that needs it (fuzz workers and ParseEvent tests never do).
var stripeMock struct {
	once sync.Once
	url  string
	err  error
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopStripeMock()
	// A goroutine a test started that is still running once stripe-mock
	// is stopped is a leak (goleak.VerifyTestMain would check before the
	// stop, while stripe-mock's readers still run).
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// stripeMockURL returns stripe-mock's base URL, starting it once; a test
// fails, never skips, when there is no stripe-mock.
func stripeMockURL(t testing.TB) string {
	t.Helper()
	stripeMock.once.Do(startStripeMock)
	if stripeMock.err != nil {
		t.Fatal(stripeMock.err)
	}
	return stripeMock.url
}

// findStripeMock looks in $STRIPE_MOCK_BIN, then PATH, then the
// repository's bin/ (found by walking up to go.work).
func findStripeMock() (string, error) {
	if p := os.Getenv("STRIPE_MOCK_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("stripe-mock: STRIPE_MOCK_BIN=%s: %w (unset it and run `make tools` at the repository root)", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			p := filepath.Join(dir, "bin", "stripe-mock")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("stripe-mock not found (not in $STRIPE_MOCK_BIN, PATH or <repo>/bin): run `make tools` at the repository root")
}

func startStripeMock() {
	bin, err := findStripeMock()
	if err != nil {
		stripeMock.err = err
		return
	}
	dir, err := os.MkdirTemp("", "stripe-mock")
	if err != nil {
		stripeMock.err = err
		return
	}
	stripeMock.dir = dir
	// HTTP on a free loopback port. -http-addr alone would also open
	// HTTPS on the fixed port 12112, which parallel test binaries would
	// fight over, so HTTPS goes to a socket in our own directory.
	// It lives as long as the test binary (the parent-death signal ends
	// it), so no test's context bounds it.
	cmd := exec.CommandContext(context.Background(), bin, "-http-addr", "127.0.0.1:0", "-https-unix", filepath.Join(dir, "https.sock"))
	setParentDeathSignal(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		stripeMock.err = err
		return
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		stripeMock.err = fmt.Errorf("start %s: %w", bin, err)
		return
	}
	stripeMock.cmd = cmd
	stripeMock.done = make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		defer close(stripeMock.done)
		sc := bufio.NewScanner(out)
		const prefix = "Listening for HTTP at address: "
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				addr <- a
				break
			}
		}
		// Keep reading so that stripe-mock never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addr:
		stripeMock.url = "http://" + a
	case <-stripeMock.done:
		_ = cmd.Wait()
		stripeMock.err = fmt.Errorf("%s exited before listening: %s", bin, stderr.String())
	case <-time.After(60 * time.Second):
		stripeMock.err = fmt.Errorf("%s did not listen within a minute: %s", bin, stderr.String())
	}
}

func stopStripeMock() {
	if stripeMock.cmd != nil && stripeMock.cmd.ProcessState == nil {
		_ = stripeMock.cmd.Process.Kill()
		_ = stripeMock.cmd.Wait()
	}
	if stripeMock.dir != "" {
		_ = os.RemoveAll(stripeMock.dir)
	}
}
