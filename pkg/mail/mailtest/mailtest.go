// Package mailtest runs a real SMTP server for tests: Mailpit, started on
// free loopback ports, whose HTTP API the tests read messages through.
// `make tools` installs the pinned Mailpit into bin/; MAILPIT_BIN names
// another binary.
package mailtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running Mailpit.
type Server struct {
	// SMTPURL is what ALMONER_SMTP_URL is set to: smtp://127.0.0.1:<port>.
	SMTPURL string
	// APIURL is the base of Mailpit's HTTP API.
	APIURL string
	cmd    *exec.Cmd
}

var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns the test binary's one Mailpit, started by the first test
// that asks; a test fails, never skips, without one. Tests that share it
// tell their messages apart by recipient (Messages). Call Stop from
// TestMain, or let the parent-death signal end it with the test binary.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() { shared.srv, shared.err = Start() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.srv
}

// StopShared stops the shared Mailpit, if one was started.
func StopShared() {
	if shared.srv != nil {
		shared.srv.Stop()
	}
}

// Start starts a Mailpit of its own on two free loopback ports.
func Start() (*Server, error) {
	bin, err := find()
	if err != nil {
		return nil, err
	}
	var last error
	// A free port found by listening may be taken by another process
	// before Mailpit binds it: try again with new ports.
	for range 3 {
		s, err := start(bin)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func start(bin string) (*Server, error) {
	smtpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// No --database: Mailpit keeps a temporary one it deletes on exit.
	// Mailpit outlives the call that starts it: it is stopped by Stop.
	cmd := exec.CommandContext(context.Background(), bin, "--quiet", "--smtp", smtpAddr, "--listen", httpAddr)
	// Mailpit dies with the test binary, even one killed by -timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{SMTPURL: "smtp://" + smtpAddr, APIURL: "http://" + httpAddr, cmd: cmd}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := s.awaitReady(exited); err != nil {
		s.Stop()
		return nil, fmt.Errorf("mailpit: %w: %s", err, stderr.String())
	}
	return s, nil
}

// awaitReady polls Mailpit's readiness endpoint for up to a minute.
func (s *Server) awaitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("exited before listening")
		default:
		}
		if s.ready() {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("not ready within a minute")
}

// ready reports whether Mailpit answers its readiness endpoint.
func (s *Server) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close() // nothing of the body is read
	return resp.StatusCode == http.StatusOK
}

// Stop kills Mailpit.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
}

func freeAddr() (string, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// find looks in $MAILPIT_BIN, then PATH, then the repository's bin/
// (found by walking up to go.work).
func find() (string, error) {
	if p := os.Getenv("MAILPIT_BIN"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("mailpit"); err == nil {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			p := filepath.Join(dir, "bin", "mailpit")
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
	return "", errors.New("mailpit not found (not in $MAILPIT_BIN, PATH or <repo>/bin): run `make tools` at the repository root")
}

// Message is a received message as Mailpit's API shows it.
type Message struct {
	ID      string
	Subject string
	From    Address
	To      []Address
	// Text is the plain-text part; HTML the HTML part, if any.
	Text string
	HTML string
	// Attachments are the attached files.
	Attachments []Attachment
}

// Attachment is an attached file of a received message.
type Attachment struct {
	FileName    string
	ContentType string
	Size        int
}

// Address is a mailbox of a received message.
type Address struct {
	Name    string
	Address string
}

// Messages returns the messages received for to, newest first.
func (s *Server) Messages(ctx context.Context, to string) ([]Message, error) {
	var list struct {
		Messages []struct{ ID string }
	}
	q := url.Values{"query": {"to:" + to}}
	if err := s.get(ctx, "/api/v1/search?"+q.Encode(), &list); err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(list.Messages))
	for _, m := range list.Messages {
		var full Message
		if err := s.get(ctx, "/api/v1/message/"+url.PathEscape(m.ID), &full); err != nil {
			return nil, err
		}
		out = append(out, full)
	}
	return out, nil
}

// Await returns the messages for to once there are at least n of them,
// polling for up to 30 seconds (the sender runs on its own interval).
func (s *Server) Await(t testing.TB, to string, n int) []Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		msgs, err := s.Messages(ctx, to)
		if err != nil {
			t.Fatalf("mailpit: messages for %s: %v", to, err)
		}
		if len(msgs) >= n {
			return msgs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("mailpit: %d messages for %s after 30 s, want %d", len(msgs), to, n)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (s *Server) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // the decode's error is the one that matters
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}
