// Package app assembles Almoner processes: which services a process hosts
// (--target), its gRPC server, and the REST gateway in front.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/almoner/almoner/gateway"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/services/auth"
	"github.com/almoner/almoner/services/contacts"
	"github.com/almoner/almoner/services/imports"
	"github.com/almoner/almoner/services/inventory"
	"github.com/almoner/almoner/services/orders"
	"github.com/almoner/almoner/services/reports"
	"github.com/almoner/almoner/services/webhooks"
)

// Modules is every service the binary can host, by --target name; Needs
// declares which of them each one needs migrated.
var Modules = map[string]service.Module{
	auth.Name:      auth.Module,
	contacts.Name:  contacts.Module,
	imports.Name:   imports.Module,
	inventory.Name: inventory.Module,
	orders.Name:    orders.Module,
	reports.Name:   reports.Module,
	webhooks.Name:  webhooks.Module,
}

// GatewayTarget is the --target name of the REST edge.
const GatewayTarget = "gateway"

// Targets lists the valid --target values.
func Targets() []string {
	return append([]string{"all", GatewayTarget}, Services()...)
}

// Config configures a process.
type Config struct {
	// Targets: "all", "gateway", or service names.
	Targets     []string
	DatabaseURL string
	HTTPAddr    string
	GRPCAddr    string
	// MetricsAddr is where this process serves /metrics
	// (ALMONER_METRICS_ADDR), on a listener of its own: never on the API
	// port, which anyone can reach. "" or "off" serves none.
	MetricsAddr   string
	Environment   string
	ErrorsBaseURL string
	Migrate       bool
	// Upstreams are service addresses for a process that does not host
	// them (ALMONER_<SERVICE>_ADDR).
	Upstreams map[string]string
	Logger    *slog.Logger
	// ServiceConfig is where services read their own settings; the
	// environment when nil.
	ServiceConfig config.Source
}

// FromEnv returns the configuration the environment describes.
func FromEnv() (Config, error) {
	migrate, err := config.Bool("ALMONER_MIGRATE", true)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		Targets:       []string{"all"},
		DatabaseURL:   config.String("DATABASE_URL", ""),
		HTTPAddr:      config.String("ALMONER_HTTP_ADDR", ":8080"),
		GRPCAddr:      config.String("ALMONER_GRPC_ADDR", "127.0.0.1:9090"),
		MetricsAddr:   config.String("ALMONER_METRICS_ADDR", DefaultMetricsAddr),
		Environment:   config.String("ALMONER_ENVIRONMENT", "sandbox"),
		ErrorsBaseURL: config.String("ALMONER_ERRORS_BASE_URL", "/errors"),
		Migrate:       migrate,
		Upstreams:     map[string]string{},
	}
	for name := range Modules {
		if v := config.String(config.ServiceAddrVar(name), ""); v != "" {
			cfg.Upstreams[name] = v
		}
	}
	return cfg, nil
}

// DefaultMetricsAddr is where /metrics is served unless
// ALMONER_METRICS_ADDR says otherwise: loopback only, so that nothing
// outside the machine (or the pod) reads it until an operator opens it.
const DefaultMetricsAddr = "127.0.0.1:9464"

// App is a running process.
type App struct {
	cfg        Config
	host       *service.Host
	gw         *gateway.Gateway
	httpSrv    *http.Server
	httpLis    net.Listener
	metricsSrv *http.Server
	metricsLis net.Listener
	served     chan error
}

// Start starts what cfg.Targets names: the services in one gRPC host,
// then the gateway in front of them (and of cfg.Upstreams for services
// that run elsewhere), then the metrics listener.
func Start(ctx context.Context, cfg Config) (_ *App, err error) {
	mods, withGateway, key, err := prepare(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, served: make(chan error, 1)}
	defer func() {
		if err != nil {
			if a.gw != nil {
				a.gw.Close()
			}
			err = errors.Join(err, a.stopHost(ctx))
		}
	}()
	upstreams, err := a.startHost(ctx, mods, key)
	if err != nil {
		return nil, err
	}
	if withGateway {
		if err := a.startGateway(ctx, upstreams, key); err != nil {
			return nil, err
		}
	}
	a.serveMetrics()
	return a, nil
}

// prepare checks cfg, resolves its targets and settles the keys, and
// checks the database before anything is migrated: a process that cannot
// serve leaves the database as it found it.
func prepare(ctx context.Context, cfg *Config) (mods []service.Module, withGateway bool, key *authctx.Key, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Environment != "sandbox" && cfg.Environment != "production" {
		return nil, false, nil, fmt.Errorf("ALMONER_ENVIRONMENT=%q: want sandbox or production", cfg.Environment)
	}
	if mods, withGateway, err = resolve(cfg.Targets); err != nil {
		return nil, false, nil, err
	}
	if cfg.ServiceConfig, err = sealingKey(*cfg, mods, withGateway); err != nil {
		return nil, false, nil, err
	}
	if key, err = internalKey(*cfg, mods, withGateway); err != nil {
		return nil, false, nil, err
	}
	if len(mods) > 0 {
		if cfg.DatabaseURL == "" {
			return nil, false, nil, errors.New("DATABASE_URL is required")
		}
		settings, err := db.LoadSettings(cfg.ServiceConfig, cfg.DatabaseURL)
		if err != nil {
			return nil, false, nil, err
		}
		if err := checkNeeds(ctx, settings, cfg.Migrate, mods); err != nil {
			return nil, false, nil, err
		}
	}
	return mods, withGateway, key, nil
}

// startHost serves mods in one gRPC host (none: nothing to start) and
// returns every service's address: cfg.Upstreams, with the host's own.
func (a *App) startHost(ctx context.Context, mods []service.Module, key *authctx.Key) (map[string]string, error) {
	cfg := a.cfg
	upstreams := map[string]string{}
	for k, v := range cfg.Upstreams {
		upstreams[k] = v
	}
	if len(mods) == 0 {
		return upstreams, nil
	}
	var err error
	a.host, err = service.StartHost(ctx, service.HostConfig{
		DatabaseURL: cfg.DatabaseURL, GRPCAddr: cfg.GRPCAddr, Environment: cfg.Environment,
		Migrate: cfg.Migrate, Logger: cfg.Logger, Upstreams: cfg.Upstreams, Config: cfg.ServiceConfig, InternalKey: key,
	}, mods...)
	if err != nil {
		return nil, err
	}
	// The gateway in this process reaches the services hosted here over
	// the host's local socket.
	for _, m := range mods {
		upstreams[m.Name] = a.host.LocalAddr()
	}
	return upstreams, nil
}

// startGateway builds the gateway in front of the upstreams it knows and
// serves it on cfg.HTTPAddr.
func (a *App) startGateway(ctx context.Context, upstreams map[string]string, key *authctx.Key) error {
	cfg := a.cfg
	gwUpstreams := map[string]string{}
	for _, name := range gateway.Services() {
		if addr := upstreams[name]; addr != "" {
			gwUpstreams[name] = addr
		}
	}
	// ALMONER_TRUSTED_PROXIES comes from the same source as the
	// services' settings: the environment, or a test's overlay.
	trusted, err := ratelimit.ParseTrustedProxies(cfg.ServiceConfig.String("ALMONER_TRUSTED_PROXIES", ""))
	if err != nil {
		return fmt.Errorf("ALMONER_TRUSTED_PROXIES: %w", err)
	}
	bodyMemory, err := cfg.ServiceConfig.Int("ALMONER_BODY_MEMORY_BYTES", gateway.DefaultBodyMemoryBytes)
	if err != nil {
		return err
	}
	minRate, err := cfg.ServiceConfig.Int("ALMONER_IMPORT_MIN_BYTES_PER_SECOND", gateway.DefaultImportMinBytesPerSecond)
	if err != nil {
		return err
	}
	grace, err := cfg.ServiceConfig.Duration("ALMONER_IMPORT_RATE_GRACE", gateway.DefaultImportRateGrace)
	if err != nil {
		return err
	}
	a.gw, err = gateway.New(ctx, gateway.Config{Upstreams: gwUpstreams, ErrorsBaseURL: cfg.ErrorsBaseURL, Logger: cfg.Logger,
		TrustedProxies: trusted, BodyMemoryBytes: int64(bodyMemory), InternalKey: key,
		ImportMinBytesPerSecond: int64(minRate), ImportRateGrace: grace})
	if err != nil {
		return err
	}
	if a.httpLis, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.HTTPAddr); err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	a.httpSrv = &http.Server{
		Handler:           a.gw,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	go func() { a.served <- a.httpSrv.Serve(a.httpLis) }()
	return nil
}

// serveMetrics serves /metrics on cfg.MetricsAddr. A listener that cannot
// be opened (the port taken by another process on a developer's machine)
// is logged and the process serves on without metrics: losing the
// scrape must not take the API down with it, and the scrape target shows
// as down to whoever watches it.
func (a *App) serveMetrics() {
	addr := a.cfg.MetricsAddr
	if addr == "" || addr == "off" {
		return
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		a.cfg.Logger.Error("metrics listener not started: serving without /metrics (ALMONER_METRICS_ADDR; off disables it)",
			"addr", addr, "error", err.Error())
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", telemetry.MetricsHandler())
	a.metricsLis = lis
	a.metricsSrv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.cfg.Logger.Handler(), slog.LevelWarn),
	}
	a.cfg.Logger.Info("metrics listener", "addr", lis.Addr().String())
	go func() { _ = a.metricsSrv.Serve(lis) }()
}

func resolve(targets []string) ([]service.Module, bool, error) {
	var mods []service.Module
	gw := false
	for _, t := range targets {
		for _, name := range strings.Split(t, ",") {
			name = strings.TrimSpace(name)
			switch name {
			case "all":
				gw = true
				for _, n := range Services() {
					mods = appendModule(mods, Modules[n])
				}
			case GatewayTarget:
				gw = true
			case "":
			default:
				m, ok := Modules[name]
				if !ok {
					return nil, false, fmt.Errorf("unknown target %q (want one of %s)", name, strings.Join(Targets(), ", "))
				}
				mods = appendModule(mods, m)
			}
		}
	}
	if len(mods) == 0 && !gw {
		return nil, false, errors.New("no target to run")
	}
	// Migrated and started as Services orders them: what a service needs
	// first, whatever order --target names them in.
	order := Services()
	slices.SortStableFunc(mods, func(a, b service.Module) int {
		return slices.Index(order, a.Name) - slices.Index(order, b.Name)
	})
	return mods, gw, nil
}

// sealedBy are the services that seal secrets at rest with the key in
// secretbox.KeyVar: webhook signing secrets and payment processor keys.
var sealedBy = []string{auth.Name, webhooks.Name}

// sealingKey returns the settings the services are built with. A process
// hosting a service of sealedBy needs the deployment's sealing key, the
// same in every process and across restarts. Only a sandbox process that
// runs everything may go without: no other process can have sealed
// anything it must read, so one random key, shared by its auth and
// webhooks services, serves until it stops. Every other process without
// the key refuses to start, saying how to set one.
func sealingKey(cfg Config, mods []service.Module, withGateway bool) (config.Source, error) {
	src := cfg.ServiceConfig
	if src == nil {
		src = config.Env
	}
	seals := slices.ContainsFunc(mods, func(m service.Module) bool { return slices.Contains(sealedBy, m.Name) })
	if !seals || src.String(secretbox.KeyVar, "") != "" {
		// A key that is set is parsed, and refused if malformed, by the
		// services that use it.
		return cfg.ServiceConfig, nil
	}
	if cfg.Environment == "production" {
		return nil, fmt.Errorf("%w (production always needs one)", secretbox.ErrNoKey)
	}
	if !withGateway || len(mods) != len(Modules) {
		return nil, fmt.Errorf("--target=%s: %w", strings.Join(cfg.Targets, ","), secretbox.ErrNoKey)
	}
	cfg.Logger.Warn(secretbox.KeyVar + " is not set: webhook signing secrets and payment processor keys are sealed with a random key " +
		"of this process, and no process can open them after it stops (`make run` keeps a key in .data/secret-key)")
	return config.Overlay(map[string]string{secretbox.KeyVar: secretbox.NewKey()}, src), nil
}

// internalKey returns the key that signs and verifies this process's
// internal calls (authctx.KeyVar). Every process of a deployment needs the
// same one: the gateway signs what the services verify, and the services
// sign their calls to each other. Only a sandbox process that runs
// everything may go without, since it calls no other process: it signs
// with a random key of its own, which no admin command knows. Every other
// process without the key refuses to start, saying how to set one.
func internalKey(cfg Config, mods []service.Module, withGateway bool) (*authctx.Key, error) {
	src := cfg.ServiceConfig
	if src == nil {
		src = config.Env
	}
	key, err := authctx.KeyFromConfig(src)
	if !errors.Is(err, authctx.ErrNoKey) {
		return key, err
	}
	if cfg.Environment == "production" {
		return nil, fmt.Errorf("%w (production always needs one)", err)
	}
	if !withGateway || len(mods) != len(Modules) {
		return nil, fmt.Errorf("--target=%s: %w", strings.Join(cfg.Targets, ","), err)
	}
	cfg.Logger.Warn(authctx.KeyVar + " is not set: this process signs its internal calls with a random key of its own, " +
		"so `almoner admin` cannot call it (`make run` keeps a key in .data/internal-key, where admin finds it)")
	return authctx.ParseKey(authctx.NewKeyHex())
}

func appendModule(mods []service.Module, m service.Module) []service.Module {
	if slices.ContainsFunc(mods, func(x service.Module) bool { return x.Name == m.Name }) {
		return mods
	}
	return append(mods, m)
}

// AllMigrations returns every service's migrations, each schema once, the
// schemas a service needs (Needs) before its own.
func AllMigrations() []db.Migrations {
	seen := map[string]bool{}
	var out []db.Migrations
	for _, n := range Services() {
		for _, s := range Modules[n].Migrations() {
			if !seen[s.Schema] {
				seen[s.Schema] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// HTTPAddr is the REST listener's address, or "".
func (a *App) HTTPAddr() string {
	if a.httpLis == nil {
		return ""
	}
	return a.httpLis.Addr().String()
}

// MetricsAddr is the /metrics listener's address, or "" when there is
// none.
func (a *App) MetricsAddr() string {
	if a.metricsLis == nil {
		return ""
	}
	return a.metricsLis.Addr().String()
}

// GRPCAddr is the gRPC listener's address, or "".
func (a *App) GRPCAddr() string {
	if a.host == nil {
		return ""
	}
	return a.host.Addr()
}

// Host is the service host, or nil for a gateway-only process.
func (a *App) Host() *service.Host { return a.host }

// Served reports the HTTP server's exit.
func (a *App) Served() <-chan error { return a.served }

// Stop shuts down gracefully: the HTTP server stops accepting and finishes
// in-flight requests, then the services finish theirs.
func (a *App) Stop(ctx context.Context) error {
	var errs []error
	if a.httpSrv != nil {
		if err := a.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		a.gw.Close()
	}
	if err := a.stopHost(ctx); err != nil {
		errs = append(errs, err)
	}
	if a.metricsSrv != nil {
		// Last, so that the drain above can still be scraped. Scrapes are
		// short reads of memory: no need to let one finish.
		_ = a.metricsSrv.Close()
	}
	return errors.Join(errs...)
}

func (a *App) stopHost(ctx context.Context) error {
	if a.host == nil {
		return nil
	}
	return a.host.Stop(ctx)
}
