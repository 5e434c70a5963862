package testpg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Server is a private PostgreSQL server: a primary (StartPrimary) or a
// streaming hot standby of one (Standby).
type Server struct {
	// Port is its loopback TCP port.
	Port int
	// Dir is its data directory.
	Dir   string
	root  string
	own   owner
	pgctl string
	// parent is the primary a standby follows (nil for a primary); the
	// primary owns the temporary directory.
	parent *Server
}

// URL is the server's URL for database name, as user postgres.
func (s *Server) URL(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, database)
}

// settings every private server runs with: no durability (a test's
// server never survives a crash of the machine), enough connections for
// a split cluster, streaming replication on, and pg_stat_statements
// loaded, so that a test can ask a standby which statements it ran.
var settings = []string{
	"listen_addresses=127.0.0.1", "fsync=off", "synchronous_commit=off", "full_page_writes=off",
	"max_connections=150", "wal_level=replica", "max_wal_senders=5", "hot_standby=on",
	"hot_standby_feedback=on", "shared_buffers=32MB", "log_min_messages=warning",
	"shared_preload_libraries=pg_stat_statements",
}

// StartPrimary creates and starts a primary on a free port.
func StartPrimary(ctx context.Context) (*Server, error) {
	o, err := currentOwner()
	if err != nil {
		return nil, err
	}
	initdb, err := Bin("initdb")
	if err != nil {
		return nil, err
	}
	pgctl, err := Bin("pg_ctl")
	if err != nil {
		return nil, err
	}
	root, err := tempDir(o, "almoner-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: filepath.Join(root, "primary"), root: root, own: o, pgctl: pgctl}
	if err := o.run(ctx, initdb, "-D", s.Dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	return s, nil
}

// Standby makes a streaming hot standby of s with pg_basebackup -R and
// starts it on a free port.
func (s *Server) Standby(ctx context.Context) (*Server, error) {
	bb, err := Bin("pg_basebackup")
	if err != nil {
		return nil, err
	}
	sb := &Server{Dir: filepath.Join(s.root, "standby-"+strconv.Itoa(s.Port)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		root: s.root, own: s.own, pgctl: s.pgctl, parent: s}
	if err := s.own.run(ctx, bb, "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres",
		"-D", sb.Dir, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return nil, err
	}
	return sb, sb.Start(ctx)
}

// Start starts the server (again), on a free port the first time and on
// its port after that.
func (s *Server) Start(ctx context.Context) error {
	if s.Port == 0 {
		p, err := FreePort()
		if err != nil {
			return err
		}
		s.Port = p
	}
	opts := "-p " + strconv.Itoa(s.Port) + " -k " + s.Dir
	for _, kv := range settings {
		opts += " -c " + kv
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.own.run(cctx, s.pgctl, "-D", s.Dir, "-l", filepath.Join(s.Dir, "server.log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		return err
	}
	return waitPort(cctx, s.Port)
}

// Stop stops the server (fast shutdown: sessions are ended).
func (s *Server) Stop(ctx context.Context) error {
	return s.own.run(ctx, s.pgctl, "-D", s.Dir, "-m", "fast", "-w", "stop")
}

// Close stops the server and, for a primary, removes every file of it
// and its standbys (stop the standbys first).
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = s.own.run(ctx, s.pgctl, "-D", s.Dir, "-m", "immediate", "-w", "stop")
	if s.parent == nil {
		_ = os.RemoveAll(s.root)
	}
}

// Log returns the server's log, for a failing test to show.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	return string(b)
}
