// Package webhooks is the webhooks service: a tenant's outbound endpoints
// (the public REST resource, secrets shown once) and the dispatcher that
// turns audit-log events into signed HTTPS POSTs with retries.
package webhooks

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/webhooks/auditlog"
	"github.com/almoner/almoner/services/webhooks/migrations"
	"github.com/almoner/almoner/services/webhooks/store"
)

// Name is the service's name in --target.
const Name = "webhooks"

// The spec's delivery constants (Webhook limits), the defaults of Config.
const (
	DefaultTick         = 30 * time.Second
	DefaultRetryBase    = time.Minute
	DefaultTimeout      = 10 * time.Second
	DefaultEnqueueLimit = 500
	DefaultSendLimit    = 100
	DefaultMaxAttempts  = 5
)

// DefaultDeliveryRetention is the default Config.DeliveryRetention
// (ALMONER_WEBHOOK_DELIVERY_RETENTION): a quarter of delivery records to
// debug a receiver with, three times the event feed's own window.
const DefaultDeliveryRetention = 90 * 24 * time.Hour

// DefaultEndpointLimit is the default Config.EndpointLimit
// (ALMONER_WEBHOOK_ENDPOINT_LIMIT).
const DefaultEndpointLimit = 50

// Firing is the auth service's answer about a tenant's events: whether
// they fire (the tenant is active with webhooks:enabled), and since when.
type Firing struct {
	// On: the tenant's events are delivered.
	On bool
	// Since is when the tenant last began to fire; an event that occurred
	// before it is passed over even when first read after it, so an event
	// committed while the flag was off is never delivered. Zero: no bound.
	Since time.Time
}

// FeatureLookup answers whether, and since when, a tenant's events fire.
type FeatureLookup func(ctx context.Context, tenantID string) (Firing, error)

// Config is the webhooks service's configuration.
type Config struct {
	// Tick is the dispatcher's interval.
	Tick time.Duration
	// RetryBase is the delay after the first failed attempt; the delay
	// after attempt n is RetryBase·2^(n-1).
	RetryBase time.Duration
	// Timeout bounds one attempt, connection included.
	Timeout time.Duration
	// EnqueueLimit is the most events enqueued per endpoint per tick.
	EnqueueLimit int
	// SendLimit is the most deliveries in flight, claimed per tick.
	SendLimit int
	// MaxAttempts is the number of attempts before a delivery is abandoned.
	MaxAttempts int
	// EndpointLimit is the most active endpoints a tenant may have: every
	// event is delivered once per subscribed endpoint, so endpoints
	// multiply the dispatcher's work. Registering one more, or switching
	// an inactive one back on, past it is a 400.
	EndpointLimit int
	// Lease is how long a claimed delivery is left alone before another
	// dispatcher may assume its claimer died; it must exceed Timeout.
	Lease time.Duration
	// Dispatch runs the dispatcher in this process (API-only replicas
	// turn it off).
	Dispatch bool
	// AllowPrivate admits loopback and private targets. Development only.
	AllowPrivate bool
	// RootCAs, when set, are the CAs receivers' certificates must chain to
	// (the system pool otherwise). Development only.
	RootCAs *x509.CertPool
	// SecretKey is the 32-byte AES key sealing secrets at rest
	// (ALMONER_WEBHOOK_SECRET_KEY; package secretbox). Required: every
	// process that reads the endpoints must hold the key that sealed them.
	SecretKey []byte
	// Features tells whether a tenant has webhooks:enabled.
	Features FeatureLookup
	// Epoch reads the auth service's validation epoch, under which answers
	// of Features are cached (featureCache); nil caches nothing.
	Epoch EpochLookup
	// Resolver resolves hosts at registration; net.DefaultResolver if nil.
	Resolver *net.Resolver
	// EventRetention is how far back the event feed reaches
	// (ALMONER_EVENT_RETENTION, at least and by default 30 days): a reader
	// without a cursor starts at the first event within it, and a cursor
	// issued before it is refused (410 Events.CursorExpired).
	EventRetention time.Duration
	// DeliveryRetention is how long a finished delivery and its attempts
	// are kept (ALMONER_WEBHOOK_DELIVERY_RETENTION, default
	// DefaultDeliveryRetention, at least a day); config.Keep keeps them
	// for good, and zero takes the default.
	DeliveryRetention time.Duration
}

// ConfigFrom reads the settings from src (ALMONER_WEBHOOK_*); the defaults
// are the spec's.
func ConfigFrom(src config.Source, environment string) (Config, error) {
	cfg := Config{Dispatch: true}
	if err := readNumbers(src, &cfg); err != nil {
		return Config{}, err
	}
	if err := checkLimits(cfg); err != nil {
		return Config{}, err
	}
	if err := readSwitches(src, &cfg); err != nil {
		return Config{}, err
	}
	var err error
	if cfg.RootCAs, err = readRootCAs(src); err != nil {
		return Config{}, err
	}
	if environment == "production" && (cfg.AllowPrivate || cfg.RootCAs != nil) {
		return Config{}, errors.New("ALMONER_WEBHOOK_ALLOW_PRIVATE and ALMONER_WEBHOOK_CA_FILE are for development; not allowed in production")
	}
	if cfg.SecretKey, err = readSecretKey(src); err != nil {
		return Config{}, err
	}
	if cfg.DeliveryRetention, err = src.Retention("ALMONER_WEBHOOK_DELIVERY_RETENTION", DefaultDeliveryRetention, 24*time.Hour); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// readNumbers reads the durations and counts into cfg, each defaulting to
// the spec's.
func readNumbers(src config.Source, cfg *Config) error {
	var err error
	durs := []struct {
		key string
		def time.Duration
		dst *time.Duration
	}{
		{"ALMONER_WEBHOOK_TICK", DefaultTick, &cfg.Tick},
		{"ALMONER_WEBHOOK_RETRY_BASE", DefaultRetryBase, &cfg.RetryBase},
		{"ALMONER_WEBHOOK_TIMEOUT", DefaultTimeout, &cfg.Timeout},
		{"ALMONER_WEBHOOK_LEASE", 0, &cfg.Lease},
		{"ALMONER_EVENT_RETENTION", MinEventRetention, &cfg.EventRetention},
	}
	for _, d := range durs {
		if *d.dst, err = src.Duration(d.key, d.def); err != nil {
			return err
		}
	}
	ints := []struct {
		key string
		def int
		dst *int
	}{
		{"ALMONER_WEBHOOK_ENQUEUE_LIMIT", DefaultEnqueueLimit, &cfg.EnqueueLimit},
		{"ALMONER_WEBHOOK_SEND_LIMIT", DefaultSendLimit, &cfg.SendLimit},
		{"ALMONER_WEBHOOK_MAX_ATTEMPTS", DefaultMaxAttempts, &cfg.MaxAttempts},
		{"ALMONER_WEBHOOK_ENDPOINT_LIMIT", DefaultEndpointLimit, &cfg.EndpointLimit},
	}
	for _, i := range ints {
		if *i.dst, err = src.Int(i.key, i.def); err != nil {
			return err
		}
	}
	return nil
}

// checkLimits refuses a retention, endpoint limit or enqueue limit out of
// bounds.
func checkLimits(cfg Config) error {
	if cfg.EventRetention < MinEventRetention {
		return errNoRetention
	}
	if cfg.EndpointLimit < 1 {
		return fmt.Errorf("ALMONER_WEBHOOK_ENDPOINT_LIMIT: %d is not a positive number of endpoints", cfg.EndpointLimit)
	}
	if cfg.EnqueueLimit > audit.MaxReadLimit {
		return fmt.Errorf("ALMONER_WEBHOOK_ENQUEUE_LIMIT: at most %d", audit.MaxReadLimit)
	}
	return nil
}

// readSwitches reads ALMONER_WEBHOOK_DISPATCH and
// ALMONER_WEBHOOK_ALLOW_PRIVATE into cfg.
func readSwitches(src config.Source, cfg *Config) error {
	var err error
	if cfg.Dispatch, err = src.Bool("ALMONER_WEBHOOK_DISPATCH", true); err != nil {
		return err
	}
	if cfg.AllowPrivate, err = src.Bool("ALMONER_WEBHOOK_ALLOW_PRIVATE", false); err != nil {
		return err
	}
	return nil
}

// readRootCAs reads the CAs of ALMONER_WEBHOOK_CA_FILE; nil when it is
// unset.
func readRootCAs(src config.Source) (*x509.CertPool, error) {
	f := src.String("ALMONER_WEBHOOK_CA_FILE", "")
	if f == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(f) //nolint:gosec // G304: the operator names this file
	if err != nil {
		return nil, fmt.Errorf("ALMONER_WEBHOOK_CA_FILE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("ALMONER_WEBHOOK_CA_FILE: no PEM certificate in the file")
	}
	return pool, nil
}

// readSecretKey reads the key that seals secrets at rest, which has no
// default.
func readSecretKey(src config.Source) ([]byte, error) {
	// The process that hosts everything in a sandbox gets a random key
	// from its host when none is set (cmd/almoner); anything else must be
	// given one, the same in every process.
	k := src.String(secretbox.KeyVar, "")
	if k == "" {
		return nil, secretbox.ErrNoKey
	}
	return secretbox.ParseKey(k)
}

// Migrations are the schemas the service needs: the audit log and its own.
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), migrations.Set()}
}

// Service is the webhooks service.
type Service struct {
	cfg        Config
	store      *store.Store
	sealer     *secretbox.Sealer
	cursors    cursorKey
	policy     urlPolicy
	sender     *sender
	features   *featureCache
	logger     *slog.Logger
	dispatcher *Dispatcher
	// now is the clock of the event feed's retention (tests move it).
	now func() time.Time
	// recoveryLimit is maxRecoveryPending (tests lower it).
	recoveryLimit int
}

// New returns the webhooks service on pool. A zero Config field takes the
// spec's default; SecretKey is required.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.SecretKey == nil {
		return nil, secretbox.ErrNoKey
	}
	sl, err := secretbox.New(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	cursors, err := newCursorKey(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	features := cfg.Features
	if features == nil {
		features = func(context.Context, string) (Firing, error) {
			return Firing{}, errors.New("no tenant feature lookup configured")
		}
	}
	policy := urlPolicy{allowPrivate: cfg.AllowPrivate, resolver: cfg.Resolver}
	s := &Service{
		cfg: cfg, store: store.New(pool), sealer: sl, cursors: cursors, policy: policy, logger: logger,
		sender:   newSender(policy, cfg.Timeout, cfg.RootCAs, cfg.SendLimit),
		features: newFeatureCache(features, cfg.Epoch),
		now:      time.Now, recoveryLimit: maxRecoveryPending,
	}
	s.dispatcher = newDispatcher(s)
	return s, nil
}

// withDefaults is cfg with each unset number at its default, or the
// refusal of a lease that does not outlast an attempt.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.DeliveryRetention == 0 { // negative is config.Keep
		cfg.DeliveryRetention = DefaultDeliveryRetention
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.Tick, DefaultTick}, {&cfg.RetryBase, DefaultRetryBase}, {&cfg.Timeout, DefaultTimeout}, {&cfg.EventRetention, MinEventRetention}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		v   *int
		def int
	}{{&cfg.EnqueueLimit, DefaultEnqueueLimit}, {&cfg.SendLimit, DefaultSendLimit}, {&cfg.MaxAttempts, DefaultMaxAttempts}, {&cfg.EndpointLimit, DefaultEndpointLimit}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.Lease <= 0 {
		// Long enough for the attempt and for recording it; short enough
		// that a crashed dispatcher's claims come back within a minute.
		cfg.Lease = cfg.Timeout + 30*time.Second
	}
	if cfg.Lease <= cfg.Timeout {
		return cfg, fmt.Errorf("ALMONER_WEBHOOK_LEASE (%s) must exceed ALMONER_WEBHOOK_TIMEOUT (%s)", cfg.Lease, cfg.Timeout)
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	return cfg, nil
}

// Register adds the service's gRPC server to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	webhooksv1.RegisterWebhookServiceServer(r, &server{s: s})
	webhooksv1.RegisterEventServiceServer(r, &eventServer{s: s})
	webhooksv1.RegisterAuditLogServiceServer(r, auditlog.New(s.store.Pool()))
}

// Start starts the dispatcher unless Config.Dispatch is off.
func (s *Service) Start(context.Context) error {
	if s.cfg.Dispatch {
		s.dispatcher.start()
	}
	return nil
}

// Stop stops the dispatcher after its in-flight sends are recorded.
func (s *Service) Stop(ctx context.Context) error {
	if s.cfg.Dispatch {
		return s.dispatcher.stop(ctx)
	}
	return nil
}

// Dispatcher is the service's dispatcher, for tests that drive ticks.
func (s *Service) Dispatcher() *Dispatcher { return s.dispatcher }

// AuthFeatureLookup reads webhooks:enabled and events_since with the auth
// service's internal TenantAdminService.GetTenant. An inactive tenant
// fires nothing.
func AuthFeatureLookup(client authv1.TenantAdminServiceClient) FeatureLookup {
	return func(ctx context.Context, tenantID string) (Firing, error) {
		resp, err := client.GetTenant(ctx, &authv1.GetTenantRequest{TenantId: tenantID})
		if err != nil {
			return Firing{}, err
		}
		t := resp.GetTenant()
		if !t.GetActive() || !slices.Contains(t.GetFeatures(), featureWebhooks) {
			return Firing{}, nil
		}
		f := Firing{On: true}
		if t.GetEventsSince() != nil {
			f.Since = t.GetEventsSince().AsTime()
		}
		return f, nil
	}
}

// AuthEpochLookup reads the validation epoch with the auth service's
// internal KeyValidationService.GetValidationEpoch, the call gateways poll
// for their key caches (it reports no key uses here).
func AuthEpochLookup(client authv1.KeyValidationServiceClient) EpochLookup {
	return func(ctx context.Context) (int64, time.Duration, error) {
		resp, err := client.GetValidationEpoch(ctx, &authv1.GetValidationEpochRequest{})
		if err != nil {
			return 0, 0, err
		}
		return resp.GetEpoch(), resp.GetCacheWindow().AsDuration(), nil
	}
}

// Module describes the webhooks service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(ctx context.Context, d service.Deps) (service.Service, error) {
		cfg, err := ConfigFrom(d.Config, d.Environment)
		if err != nil {
			return nil, err
		}
		conn, err := d.Dial("auth")
		if err != nil {
			return nil, err
		}
		cfg.Features = AuthFeatureLookup(authv1.NewTenantAdminServiceClient(conn))
		cfg.Epoch = AuthEpochLookup(authv1.NewKeyValidationServiceClient(conn))
		svc, err := New(d.DB, cfg, d.Logger)
		if err != nil {
			return nil, err
		}
		svc.store.WithReads(d.Reads)
		return svc, nil
	},
}
