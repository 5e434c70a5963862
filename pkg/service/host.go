package service

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/transport"
)

// HostConfig configures a process that hosts one or more services on one
// gRPC server.
type HostConfig struct {
	DatabaseURL string
	// GRPCAddr is where the gRPC server listens ("127.0.0.1:0" picks a port).
	GRPCAddr    string
	Environment string
	// Migrate applies the hosted services' migrations before starting.
	Migrate bool
	Logger  *slog.Logger
	// Upstreams maps service names to addresses for Deps.Dial; a service
	// hosted here is dialled at this host's own address.
	Upstreams map[string]string
	// Config is the services' settings source; the environment when nil.
	Config config.Source
	// InternalKey signs the calls the services make and verifies the
	// calls they receive (ALMONER_INTERNAL_KEY, pkg/authctx). Required.
	InternalKey *authctx.Key
}

// Host is a running gRPC server with its services.
type Host struct {
	cfg      HostConfig
	server   *grpc.Server
	health   *health.Server
	listener net.Listener
	// local is the Unix socket the same server listens on for calls
	// from this process (LocalAddr); nil when there is none, and this
	// process's calls then go over listener.
	local    net.Listener
	pool     *pgxpool.Pool
	reads    *db.ReadPool
	services []Service
	names    []string
	served   chan error

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn

	watchCtx  context.Context
	stopWatch context.CancelFunc
}

// StartHost opens the database, migrates if asked, builds and registers the
// modules, and starts serving gRPC.
func StartHost(ctx context.Context, cfg HostConfig, modules ...Module) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DatabaseURL == "" {
		return nil, errors.New("DATABASE_URL is required")
	}
	if cfg.InternalKey == nil {
		return nil, authctx.ErrNoKey
	}
	if cfg.Config == nil {
		cfg.Config = config.Env
	}
	settings, err := db.LoadSettings(cfg.Config, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := migrateModules(ctx, cfg, settings, modules); err != nil {
		return nil, err
	}
	pool, err := db.OpenWith(ctx, settings)
	if err != nil {
		return nil, err
	}
	reads, err := db.OpenReadPool(ctx, settings, pool, cfg.Logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	h := &Host{cfg: cfg, pool: pool, reads: reads, conns: map[string]*grpc.ClientConn{}, served: make(chan error, 1)}
	h.server, h.health = NewGRPCServer(cfg.Logger, cfg.InternalKey)
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.GRPCAddr)
	if err != nil {
		h.abort() // the server's stream workers run until it is stopped
		return nil, fmt.Errorf("listen on %s: %w", cfg.GRPCAddr, err)
	}
	h.listener = lis
	h.listenLocal(ctx)
	deps := Deps{DB: pool, Reads: reads, Logger: cfg.Logger, Environment: cfg.Environment, Dial: h.dial, Config: cfg.Config}
	for _, m := range modules {
		svc, err := m.New(ctx, deps)
		if err != nil {
			h.abort()
			return nil, fmt.Errorf("build %s: %w", m.Name, err)
		}
		svc.Register(h.server)
		h.services = append(h.services, svc)
		h.names = append(h.names, m.Name)
	}
	go func() { h.served <- h.server.Serve(lis) }()
	if h.local != nil {
		// Serve returns when the server stops, which lis's Serve reports.
		go func() { _ = h.server.Serve(h.local) }()
	}
	for i, svc := range h.services {
		if err := svc.Start(ctx); err != nil {
			h.abort()
			return nil, fmt.Errorf("start %s: %w", h.names[i], err)
		}
	}
	telemetry.Register(telemetry.PoolCollector(strings.Join(h.names, ","), pool))
	if reads.HasStandby() {
		telemetry.Register(reads.Collector(strings.Join(h.names, ",")))
	}
	h.setServing(true)
	h.watchCtx, h.stopWatch = context.WithCancel(context.WithoutCancel(ctx))
	go h.watchDatabase()
	return h, nil
}

func (h *Host) setServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	h.health.SetServingStatus("", st)
	for _, n := range h.names {
		h.health.SetServingStatus(n, st)
	}
}

// watchDatabase reports NOT_SERVING while PostgreSQL does not answer, so
// readiness probes (and the gateway's /readyz) take the replica out of
// rotation instead of letting it fail every request.
func (h *Host) watchDatabase() {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	serving := true
	for {
		select {
		case <-h.watchCtx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(h.watchCtx, 2*time.Second)
		err := h.pool.Ping(ctx)
		cancel()
		if h.watchCtx.Err() != nil {
			return
		}
		if ok := err == nil; ok != serving {
			serving = ok
			h.setServing(ok)
			if !ok {
				h.cfg.Logger.Error("database unreachable; reporting NOT_SERVING", "error", err.Error())
			} else {
				h.cfg.Logger.Info("database reachable again; reporting SERVING")
			}
		}
	}
}

// migrateModules applies the modules' migrations when cfg.Migrate, over
// a session of their own: the direct URL behind a transaction-mode
// pooler (db.Settings.SessionURL).
func migrateModules(ctx context.Context, cfg HostConfig, s db.Settings, modules []Module) error {
	if !cfg.Migrate {
		return nil
	}
	url, err := s.SessionURL()
	if err != nil {
		return err
	}
	var sets []db.Migrations
	for _, m := range modules {
		sets = append(sets, m.Migrations()...)
	}
	return db.Migrate(ctx, url, dedupe(sets)...)
}

func dedupe(sets []db.Migrations) []db.Migrations {
	seen := map[string]bool{}
	var out []db.Migrations
	for _, s := range sets {
		if !seen[s.Schema] {
			seen[s.Schema] = true
			out = append(out, s)
		}
	}
	return out
}

// Addr is the address the gRPC server listens on.
func (h *Host) Addr() string { return h.listener.Addr().String() }

// listenLocal opens the Unix socket the server also listens on, for the
// calls this process makes to the services it hosts (its own clients, and
// the gateway in the same process): still gRPC through a socket, signed
// and verified, but without the TCP/IP stack of loopback on every write
// and read of the hops (docs/architecture.md, "Internal hops"). It is a
// Linux abstract socket with a random name: nothing on the file system,
// gone with the process however it ends (a crashed or killed process
// leaves nothing behind). Like the TCP port, any local process may
// connect to it, and like every call on the TCP port, a call without a
// valid assertion is refused. Elsewhere, or when it cannot be opened,
// this process's calls go over TCP as any other process's do.
func (h *Host) listenLocal(ctx context.Context) {
	if runtime.GOOS != "linux" {
		return
	}
	name := "@almoner-grpc-" + rand.Text()
	lis, err := (&net.ListenConfig{}).Listen(ctx, "unix", name)
	if err != nil {
		h.cfg.Logger.Warn("no local socket for this process's own gRPC calls; they go over TCP", "error", err.Error())
		return
	}
	h.local = lis
}

// LocalAddr is the address this process dials the services it hosts at:
// the local socket (unix-abstract:…), else Addr.
func (h *Host) LocalAddr() string {
	if h.local != nil {
		return "unix-abstract:" + strings.TrimPrefix(h.local.Addr().String(), "@")
	}
	return h.Addr()
}

// Pool is the host's database pool.
func (h *Host) Pool() *pgxpool.Pool { return h.pool }

// Reads is the host's read pool (the primary's pool unless a read
// replica is configured).
func (h *Host) Reads() *db.ReadPool { return h.reads }

func (h *Host) dial(name string) (grpc.ClientConnInterface, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.conns[name]; ok {
		return c, nil
	}
	addr := h.cfg.Upstreams[name]
	for _, n := range h.names {
		if n == name {
			addr = h.LocalAddr()
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("no address for service %s (set %s)", name, config.ServiceAddrVar(name))
	}
	opts := append(append(append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, transport.DialOptions()...),
		telemetry.GRPCClientOptions()...), h.cfg.InternalKey.DialOptions()...)
	c, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	h.conns[name] = c
	return c, nil
}

func (h *Host) abort() {
	h.server.Stop()
	h.reads.Close()
	h.pool.Close()
}

// Stop reports NOT_SERVING, stops background work, lets in-flight RPCs
// finish (up to ctx's deadline), then closes connections and the pool.
func (h *Host) Stop(ctx context.Context) error {
	h.stopWatch()
	h.health.Shutdown()
	var errs []error
	for i := len(h.services) - 1; i >= 0; i-- {
		if err := h.services[i].Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", h.names[i], err))
		}
	}
	done := make(chan struct{})
	go func() { h.server.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		h.server.Stop()
	}
	h.mu.Lock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.reads.Close()
	h.pool.Close()
	return errors.Join(errs...)
}
