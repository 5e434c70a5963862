// Package apptest starts Almoner for end-to-end tests: every service and
// the REST gateway on loopback, talking real gRPC, on a fresh PostgreSQL
// database of the test's own. Tests then speak HTTP to it as an integrator
// would, and use the admin RPCs as an operator would.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/almoner/almoner/cmd/almoner/internal/app"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/pkg/traceid"
)

// Cluster is a running Almoner.
type Cluster struct {
	// URL is the gateway's base URL, e.g. http://127.0.0.1:41234.
	URL string
	// MetricsURL is the gateway process's /metrics, on its own listener
	// (ALMONER_METRICS_ADDR), e.g. http://127.0.0.1:41235/metrics. Every
	// process of a split cluster has one; in a test binary they all show
	// the same registry.
	MetricsURL string
	// GRPCAddr is the auth service's gRPC address (in one-process mode,
	// every service's); see ServiceAddr.
	GRPCAddr string
	// DatabaseURL is the test's own database.
	DatabaseURL string
	// Admin is the auth service's operator API.
	Admin authv1.TenantAdminServiceClient
	// Credentials is the auth service's internal API that gives the orders
	// service tenants' payment processor keys.
	Credentials authv1.ProcessorCredentialServiceClient
	// InternalKey is the cluster's ALMONER_INTERNAL_KEY: Admin and
	// Credentials sign their calls with it, as `almoner admin` does, and
	// a test calling a service's gRPC port directly needs it
	// (DialOptions, authctx.NewOutgoingContext).
	InternalKey *authctx.Key
	// Settings are the settings the cluster's processes run with, the keys
	// it made included: a child process joining the cluster
	// (StartChild) needs them.
	Settings map[string]string
	// Logs holds everything the processes logged.
	Logs *SyncBuffer
	// App is the process serving the gateway.
	App  *app.App
	HTTP *http.Client
	// Split reports whether every service runs as its own App.
	Split bool
	addrs map[string]string
}

// ServiceAddr is the gRPC address of one service (all the same address
// when everything runs in one process).
func (c *Cluster) ServiceAddr(service string) string { return c.addrs[service] }

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// Options change how a cluster starts.
type Options struct {
	// Environment is sandbox (default) or production.
	Environment string
	// Settings are service settings (ALMONER_* variables) for this cluster.
	Settings map[string]string
	// DatabaseURL reuses a database instead of making a fresh one.
	DatabaseURL string
	// Split runs every service as its own App on its own port, as on
	// Kubernetes; ALMONER_E2E_SPLIT=1 turns it on for every cluster
	// that makes its own database. A further replica on an existing
	// database (DatabaseURL) runs in one process unless Split asks: the
	// tests that start two or three replicas would otherwise hold eight
	// processes' pools each, and four such tests at once ran PostgreSQL
	// out of connections; the first cluster already runs split.
	Split bool
}

var tracing sync.Once

// Start starts a cluster that stops when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	// Traces exist as in production (ids cross the gRPC hop); nothing is
	// exported unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
	tracing.Do(func() {
		if _, err := telemetry.Setup(context.Background(), "almoner-test", recorder); err != nil {
			t.Fatalf("apptest: telemetry: %v", err)
		}
	})
	if opts.Environment == "" {
		opts.Environment = "sandbox"
	}
	split := opts.Split || (os.Getenv("ALMONER_E2E_SPLIT") == "1" && opts.DatabaseURL == "")
	opts.Settings = clusterSettings(opts, split)
	internalKey, err := authctx.KeyFromConfig(config.Overlay(opts.Settings, nil))
	if err != nil {
		t.Fatalf("apptest: %v", err)
	}
	dbURL := opts.DatabaseURL
	if dbURL == "" {
		dbURL = testdb.New(t, app.AllMigrations()...)
	}
	appDBURL := throughPooler(t, dbURL, opts.Settings)
	logs := &SyncBuffer{}
	registerLogs(logs)
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	run := startApps(t, appConfig(opts, appDBURL, logger), split)
	conn, err := grpc.NewClient(run.addrs["auth"], append(internalKey.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatalf("apptest: dial: %v", err)
	}
	gw := run.apps[len(run.apps)-1]
	c := &Cluster{
		URL:         "http://" + gw.HTTPAddr(),
		MetricsURL:  "http://" + gw.MetricsAddr() + "/metrics",
		GRPCAddr:    run.addrs["auth"],
		DatabaseURL: dbURL,
		Admin:       authv1.NewTenantAdminServiceClient(conn),
		Credentials: authv1.NewProcessorCredentialServiceClient(conn),
		InternalKey: internalKey,
		Settings:    opts.Settings,
		Logs:        logs,
		App:         gw,
		// Every exchange is checked against /openapi.json (contract.go).
		HTTP:  &http.Client{Timeout: 30 * time.Second, Transport: newContractTransport(t, "http://"+gw.HTTPAddr())},
		Split: split,
		addrs: run.addrs,
	}
	t.Cleanup(func() {
		_ = conn.Close()
		run.stop(t)
		if t.Failed() {
			t.Logf("apptest logs:\n%s", logs.String())
		}
	})
	return c
}

// clusterSettings are the cluster's service settings: opts.Settings over
// the keys every cluster has of its own.
func clusterSettings(opts Options, split bool) map[string]string {
	// Every cluster has an internal key of its own unless the test gives
	// one, as `make run` keeps one: the admin client signs with it (a
	// sandbox process that runs everything would otherwise make one that
	// nothing else knows). Clusters of one test binary differ in key, as
	// two deployments do.
	settings := map[string]string{authctx.KeyVar: authctx.NewKeyHex()}
	if opts.Environment == "production" || split {
		// Production, and every process that does not run everything,
		// refuses to run auth or webhooks without the key that seals
		// webhook and processor secrets; the cluster's processes share
		// one. A one-process sandbox cluster goes without, as a newcomer's
		// `almoner serve` does: its services share a random key.
		settings[secretbox.KeyVar] = secretbox.NewKey()
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	return settings
}

// appConfig is the configuration of a cluster's App that runs
// everything; a split cluster narrows its targets and addresses per App.
func appConfig(opts Options, dbURL string, logger *slog.Logger) app.Config {
	return app.Config{
		Targets:     []string{"all"},
		DatabaseURL: shortIdlePool(dbURL),
		HTTPAddr:    "127.0.0.1:0",
		GRPCAddr:    "127.0.0.1:0",
		// A port of its own per process, picked when it listens, as
		// ALMONER_METRICS_ADDR gives each process of a deployment.
		MetricsAddr:   "127.0.0.1:0",
		Environment:   opts.Environment,
		ErrorsBaseURL: "/errors",
		Migrate:       opts.DatabaseURL != "",
		Logger:        logger,
		ServiceConfig: config.Overlay(opts.Settings, nil),
	}
}

// shortIdlePool has a test process's pool close a connection idle for
// two seconds. pgxpool keeps an idle connection for 30 minutes by
// default, so a suite running four split clusters at once (eight pools
// each, two clusters in the replica tests) held up to 70 of
// PostgreSQL's default 100 connections at its peak, and anything else
// on the server pushed it over ("too many clients already").
func shortIdlePool(dbURL string) string {
	if strings.Contains(dbURL, "pool_max_conn_idle_time") {
		return dbURL
	}
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	return dbURL + sep + "pool_max_conn_idle_time=2s&pool_health_check_period=1s"
}

// running are a cluster's Apps, the gateway's last, and every service's
// gRPC address.
type running struct {
	apps  []*app.App
	addrs map[string]string
}

// stop stops the Apps, the gateway first.
func (r *running) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := len(r.apps) - 1; i >= 0; i-- {
		if err := r.apps[i].Stop(ctx); err != nil {
			t.Logf("apptest: stop: %v", err)
		}
	}
	r.apps = nil
}

// startApps starts cfg as one App, or split: each service its own App.
func startApps(t testing.TB, cfg app.Config, split bool) *running {
	ctx := context.Background()
	r := &running{addrs: map[string]string{}}
	if !split {
		a, err := app.Start(ctx, cfg)
		if err != nil {
			t.Fatalf("apptest: start: %v", err)
		}
		r.apps = append(r.apps, a)
		for n := range app.Modules {
			r.addrs[n] = a.GRPCAddr()
		}
		return r
	}
	// As on Kubernetes: each service its own process-like App with its
	// own gRPC port and pool, the gateway alone in front, all wired by
	// addresses only. The ports are picked before anything listens (every
	// App needs the others' addresses), so one can be taken meanwhile,
	// by another test's listener or the local end of any outgoing
	// connection; then the cluster starts again on new ports.
	// Each service after those it needs (app.Needs), as an operator
	// who migrates at start-up starts them.
	names := app.Services()
	for try := 1; ; try++ {
		err := startSplit(ctx, t, cfg, names, r.addrs, &r.apps)
		if err == nil {
			return r
		}
		r.stop(t)
		if !errors.Is(err, syscall.EADDRINUSE) || try == 5 {
			t.Fatalf("apptest: %v", err)
		}
	}
}

// pickAddr picks a split cluster's service addresses; a test replaces it.
var pickAddr = FreeAddr

// startSplit starts every service in its own App on freshly picked ports and
// the gateway in front, appending each started App to apps.
func startSplit(ctx context.Context, t testing.TB, cfg app.Config, names []string, addrs map[string]string, apps *[]*app.App) error {
	for _, n := range names {
		addrs[n] = pickAddr(t)
	}
	for _, n := range names {
		c := cfg
		c.Targets, c.GRPCAddr, c.HTTPAddr, c.Upstreams = []string{n}, addrs[n], "", addrs
		a, err := app.Start(ctx, c)
		if err != nil {
			return fmt.Errorf("start %s: %w", n, err)
		}
		*apps = append(*apps, a)
	}
	c := cfg
	c.Targets, c.GRPCAddr, c.Upstreams = []string{app.GatewayTarget}, "", addrs
	a, err := app.Start(ctx, c)
	if err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	*apps = append(*apps, a)
	return nil
}

// Tenant is a tenant made for a test, with a key holding every scope.
type Tenant struct {
	ID  string
	Key string
}

// NewTenant creates an active tenant with the given features
// (api-access:enabled when none) and an all-scopes key.
func (c *Cluster) NewTenant(t testing.TB, features ...string) Tenant {
	t.Helper()
	ctx := context.Background()
	resp, err := c.Admin.CreateTenant(ctx, &authv1.CreateTenantRequest{Name: "Test " + t.Name(), Slug: "t-" + randomSlug(), Features: features})
	if err != nil {
		t.Fatalf("apptest: create tenant: %v", err)
	}
	id := resp.GetTenant().GetId()
	return Tenant{ID: id, Key: c.NewKey(t, id, "all")}
}

// NewKey creates a key for tenantID with the scopes ("all" for every one).
func (c *Cluster) NewKey(t testing.TB, tenantID string, scopes ...string) string {
	t.Helper()
	resp, err := c.Admin.CreateKey(context.Background(), &authv1.CreateKeyRequest{TenantId: tenantID, Name: "test key", Scopes: scopes})
	if err != nil {
		t.Fatalf("apptest: create key: %v", err)
	}
	RegisterSecret(resp.GetApiKey().GetPlainTextKey())
	return resp.GetApiKey().GetPlainTextKey()
}

// SetProcessor connects a Stripe account to the tenant as an operator
// would (`almoner admin tenant processor set`): secretKey must be of the
// cluster's environment (sk_test_/rk_test_ in sandbox, sk_live_/rk_live_
// in production, then at least 12 characters) and webhookSecret start with
// whsec_. The orders service then reads them with GetProcessorCredentials.
// Both count as secrets that no log may hold.
func (c *Cluster) SetProcessor(t testing.TB, tenantID, secretKey, webhookSecret string) *authv1.TenantProcessor {
	t.Helper()
	RegisterSecret(secretKey)
	RegisterSecret(webhookSecret)
	resp, err := c.Admin.SetTenantProcessor(context.Background(), &authv1.SetTenantProcessorRequest{
		TenantId: tenantID, Provider: "stripe", SecretKey: secretKey, WebhookSecret: webhookSecret})
	if err != nil {
		t.Fatalf("apptest: set processor: %v", err)
	}
	return resp.GetProcessor()
}

// Response is a finished HTTP exchange.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Do sends a request with X-Api-Key set to key (omitted when key is "").
// body is sent as is when it is a string or []byte, else JSON-encoded.
func (c *Cluster) Do(t testing.TB, method, path, key string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	noteSecrets(b)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Expect fails the test unless the response has the status.
func (r *Response) Expect(t testing.TB, status int) *Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	return r
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func randomSlug() string { return traceid.New()[:16] }

// Get sends a GET for url with ctx through client (http.DefaultClient
// when nil): tests pass t.Context() so a request outliving its test is
// cancelled rather than left running.
func Get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	return client.Do(req)
}
