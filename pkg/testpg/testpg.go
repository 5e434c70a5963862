// Package testpg runs private PostgreSQL servers and poolers for the
// tests that need more than the shared test server gives: a primary with
// a streaming hot standby (pg_basebackup -R), and PgBouncer in
// transaction mode (docs/scaling.md). Everything runs on free loopback
// ports from the system's binaries, as the postgres user when the tests
// run as root (PostgreSQL and PgBouncer refuse to run as root), in a
// temporary directory removed at Stop.
package testpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnavailable wraps what is missing from the machine (binaries, the
// postgres user); tests skip on it only when asked to (see Require).
var ErrUnavailable = errors.New("testpg: unavailable")

// Bin returns the path of a PostgreSQL tool: on PATH, else under
// /usr/lib/postgresql/*/bin (Debian's layout), the newest first.
func Bin(tool string) (string, error) {
	if p, err := exec.LookPath(tool); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], tool)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found (Debian: apt-get install postgresql)", ErrUnavailable, tool)
}

// owner is who runs the servers: the postgres user when we are root.
type owner struct {
	uid, gid int
	asRoot   bool
}

func currentOwner() (owner, error) {
	if os.Geteuid() != 0 {
		return owner{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return owner{}, fmt.Errorf("%w: running as root needs a postgres user to own the servers", ErrUnavailable)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return owner{uid: uid, gid: gid, asRoot: true}, nil
}

// command builds name args run as the owner.
func (o owner) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if o.asRoot {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid)}
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	return cmd
}

// run runs a command as the owner and returns its error with its output.
func (o owner) run(ctx context.Context, name string, args ...string) error {
	cmd := o.command(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// mkdir makes a directory the owner may write.
func (o owner) mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if o.asRoot {
		return os.Chown(dir, o.uid, o.gid)
	}
	return nil
}

// writeFile writes a file the owner may read.
func (o owner) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if o.asRoot {
		return os.Chown(path, o.uid, o.gid)
	}
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tempDir makes a temporary directory the owner can enter (the servers'
// data directories and sockets live under it).
func tempDir(o owner, prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	// The postgres user must enter it when we are root.
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // a directory others must traverse
		return "", err
	}
	return dir, o.mkdir(dir)
}

// waitPort waits until something accepts connections on 127.0.0.1:port.
func waitPort(ctx context.Context, port int) error {
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nothing listens on port %d: %w", port, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
