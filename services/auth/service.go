// Package auth is the auth service: tenants, their feature flags, API keys,
// key validation for the gateway, and the scope catalog.
package auth

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/auth/impersonation"
	"github.com/almoner/almoner/services/auth/keyformat"
	"github.com/almoner/almoner/services/auth/mfa"
	"github.com/almoner/almoner/services/auth/migrations"
	"github.com/almoner/almoner/services/auth/operators"
	"github.com/almoner/almoner/services/auth/password"
	"github.com/almoner/almoner/services/auth/settings"
	"github.com/almoner/almoner/services/auth/store"
)

// Name is the service's name in --target.
const Name = "auth"

// Config is the auth service's configuration.
type Config struct {
	// Environment is sandbox or production; keys of the other one never
	// authenticate here.
	Environment string
	// UsageFlushInterval is how often last-used times are written; it
	// bounds how stale lastUsedAt can be.
	UsageFlushInterval time.Duration
	// KeyCacheWindow is how long a gateway may answer from validations it
	// cached after it last read the validation epoch, and so how long a
	// revocation or tenant change waits before it is answered. Zero turns
	// gateway caching off. Every auth replica of a deployment must use the
	// same value (docs/auth.md).
	KeyCacheWindow time.Duration
	// Sealer seals tenants' payment processor keys at rest, with the key
	// that also seals webhook secrets (ALMONER_WEBHOOK_SECRET_KEY).
	// Required.
	Sealer *secretbox.Sealer
	// KeyLimit is the most active (not revoked, not expired) API keys a
	// tenant may hold before CreateApiKey refuses; keys are validated on
	// every request and each one is a credential to track, so a tenant
	// must not mint them without bound. The admin command is not held to
	// it. Zero takes DefaultKeyLimit.
	KeyLimit int
	// Mail is where queued email goes; the auth service hosts the one
	// sender of the queue (pkg/mail) that every service writes to.
	Mail mail.Settings
	// MailSender tunes the sender (ALMONER_MAIL_INTERVAL, ALMONER_MAIL_RATE).
	MailSender mail.SenderConfig
	// Password are the argon2id costs of new password hashes
	// (ALMONER_ARGON2_MEMORY_KIB, ALMONER_ARGON2_TIME); zero fields take
	// password.Default. Hashes keep their own costs, so a change only
	// applies to passwords set after it.
	Password password.Params
	// SessionIdle ends a session unused for this long (ALMONER_SESSION_IDLE).
	SessionIdle time.Duration
	// SessionLifetime ends a session this long after sign-in, used or not
	// (ALMONER_SESSION_LIFETIME).
	SessionLifetime time.Duration
	// ImpersonationSweep is how often impersonations that no longer hold
	// (expired, support access run out, operator or user deactivated)
	// are ended without waiting for a request (ALMONER_IMPERSONATION_SWEEP); zero takes
	// impersonation.DefaultSweepInterval.
	ImpersonationSweep time.Duration
	// Retention says how long rows nobody can use any more are kept
	// (retention.go); zero fields take DefaultRetention's.
	Retention Retention
}

// Session defaults: 12 hours idle, 7 days in all.
const (
	DefaultSessionIdle     = 12 * time.Hour
	DefaultSessionLifetime = 7 * 24 * time.Hour
)

// DefaultKeyCacheWindow is the default KeyCacheWindow.
const DefaultKeyCacheWindow = 500 * time.Millisecond

// DefaultKeyLimit is the default KeyLimit (ALMONER_API_KEY_LIMIT).
const DefaultKeyLimit = 200

// DefaultConfig returns the defaults: sandbox, a 30 s usage flush, a
// 500 ms key cache window, 200 active keys per tenant; no Sealer.
func DefaultConfig() Config {
	return Config{Environment: keyformat.Sandbox, UsageFlushInterval: 30 * time.Second, KeyCacheWindow: DefaultKeyCacheWindow, KeyLimit: DefaultKeyLimit}
}

// Migrations are the schemas the service needs: its own, the audit log,
// the mail queue and the rate-limit counters (failed sign-ins).
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), mail.Migrations(), ratelimit.Migrations(), migrations.Set()}
}

// Service is the auth service.
type Service struct {
	cfg    Config
	store  *store.Store
	usage  *usageTracker
	mailer *mail.Sender // nil when mail has nowhere to go
	// limiter counts failed sign-ins.
	limiter *ratelimit.Limiter
	// dummyHash is checked for an email without a password, at the cost
	// of a real one, so the 401 takes the same time.
	dummyHash string
	logger    *slog.Logger
	now       func() time.Time
	stop      context.CancelFunc
	done      chan struct{}
}

// New returns the auth service on pool.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) (*Service, error) {
	if cfg.Sealer == nil {
		return nil, secretbox.ErrNoKey
	}
	if cfg.Environment == "" {
		cfg.Environment = keyformat.Sandbox
	}
	if cfg.UsageFlushInterval <= 0 {
		cfg.UsageFlushInterval = DefaultConfig().UsageFlushInterval
	}
	if cfg.KeyLimit <= 0 {
		cfg.KeyLimit = DefaultKeyLimit
	}
	cfg.Password = completeParams(cfg.Password)
	cfg.Retention = cfg.Retention.withDefaults()
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.SessionLifetime <= 0 {
		cfg.SessionLifetime = DefaultSessionLifetime
	}
	st := store.New(pool)
	s := &Service{cfg: cfg, store: st, usage: newUsageTracker(st.TouchKeys), logger: logger, now: time.Now,
		limiter: ratelimit.New(pool), dummyHash: password.Hash(newToken(), cfg.Password)}
	if cfg.Mail.From == "" {
		s.cfg.Mail.From = mail.DefaultFrom
	}
	if s.cfg.Mail.PublicURL == "" {
		s.cfg.Mail.PublicURL = mail.DefaultPublicURL
	}
	transport, err := mail.NewTransport(s.cfg.Mail, logger)
	if err != nil {
		return nil, err
	}
	if transport != nil {
		s.mailer = mail.NewSender(pool, transport, s.cfg.Mail.From, cfg.MailSender, logger)
	}
	return s, nil
}

// Register adds the service's gRPC servers to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	authv1.RegisterApiKeyServiceServer(r, &apiKeyServer{s: s})
	authv1.RegisterKeyValidationServiceServer(r, &validationServer{s: s})
	authv1.RegisterTenantAdminServiceServer(r, &adminServer{s: s, Server: operators.New(operators.Deps{Store: s.store, AwaitCaches: s.awaitCaches,
		ToTenant: toTenant, Now: s.now, NewToken: func() (string, []byte) { t := newToken(); return t, hashToken(t) }})})
	authv1.RegisterProcessorCredentialServiceServer(r, &processorServer{s: s})
	authv1.RegisterUserServiceServer(r, &userServer{s: s})
	authv1.RegisterMembershipServiceServer(r, &membershipServer{s: s})
	authv1.RegisterStaffAuthServiceServer(r, &staffServer{s: s})
	authv1.RegisterMfaServiceServer(r, mfa.New(s.mfaDeps()))
	access, impersonations := impersonation.New(s.impersonationDeps())
	authv1.RegisterSupportAccessServiceServer(r, access)
	authv1.RegisterImpersonationServiceServer(r, impersonations)
	authv1.RegisterOperationsServiceServer(r, operators.NewOperations(s.store))
	authv1.RegisterTenantSettingsServiceServer(r, settings.New(settings.NewStore(s.store.Pool()), s.awaitCaches))
}

// impersonationDeps are what support access and impersonation need.
func (s *Service) impersonationDeps() impersonation.Deps {
	return impersonation.Deps{Store: s.store, Now: s.now, AwaitCaches: s.awaitCaches}
}

// Start runs the last-used flusher, the impersonation sweeper, the
// housekeeping and the mail sender until Stop.
func (s *Service) Start(ctx context.Context) error {
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	var wg sync.WaitGroup
	if s.mailer != nil {
		wg.Go(func() { s.mailer.Run(ctx) })
	} else {
		s.logger.Warn("mail: neither ALMONER_SMTP_URL nor ALMONER_MAIL_DIR is set; email stays queued in mail.outbox until one is")
	}
	sweeper := impersonation.NewSweeper(s.impersonationDeps(), s.cfg.ImpersonationSweep, s.logger)
	wg.Go(func() { sweeper.Run(ctx) })
	wg.Go(func() { s.housekeep(ctx) })
	wg.Go(func() {
		t := time.NewTicker(s.cfg.UsageFlushInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.usage.Flush(ctx); err != nil {
					s.logger.Warn("flush key usage", "error", err)
				}
			}
		}
	})
	go func() {
		wg.Wait()
		close(s.done)
	}()
	return nil
}

// Stop ends the flusher and the sweeper and writes the last pending uses.
func (s *Service) Stop(ctx context.Context) error {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	return s.usage.Flush(ctx)
}

// Module describes the auth service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(ctx context.Context, d service.Deps) (service.Service, error) {
		cfg := DefaultConfig()
		cfg.Environment = d.Environment
		flush, err := d.Config.Duration("ALMONER_KEY_USAGE_FLUSH", cfg.UsageFlushInterval)
		if err != nil {
			return nil, err
		}
		cfg.UsageFlushInterval = flush
		if cfg.KeyLimit, err = d.Config.Int("ALMONER_API_KEY_LIMIT", cfg.KeyLimit); err != nil {
			return nil, err
		}
		if cfg.KeyLimit < 1 {
			return nil, fmt.Errorf("ALMONER_API_KEY_LIMIT: %d is not a positive number of keys", cfg.KeyLimit)
		}
		// "off" (or 0) turns gateway caching off: every request validates.
		if v := d.Config.String("ALMONER_KEY_CACHE_WINDOW", ""); v == "off" || v == "0" {
			cfg.KeyCacheWindow = 0
		} else if cfg.KeyCacheWindow, err = d.Config.Duration("ALMONER_KEY_CACHE_WINDOW", cfg.KeyCacheWindow); err != nil {
			return nil, err
		}
		if err := readStaffConfig(d, &cfg); err != nil {
			return nil, err
		}
		cfg.Mail = mail.SettingsFromConfig(d.Config)
		if cfg.MailSender.Interval, err = d.Config.Duration("ALMONER_MAIL_INTERVAL", mail.DefaultInterval); err != nil {
			return nil, err
		}
		if cfg.MailSender.RatePerTenant, err = d.Config.Int("ALMONER_MAIL_RATE", mail.DefaultRatePerTenant); err != nil {
			return nil, err
		}
		// The host of a sandbox process that runs everything provides a
		// random key when none is set (cmd/almoner); any other process
		// must be given the deployment's.
		if cfg.Sealer, err = secretbox.FromConfig(d.Config); err != nil {
			return nil, err
		}
		return New(d.DB, cfg, d.Logger)
	},
}

// completeParams fills unset argon2id costs with password.Default's.
func completeParams(p password.Params) password.Params {
	if p.MemoryKiB == 0 {
		p.MemoryKiB = password.Default.MemoryKiB
	}
	if p.Time == 0 {
		p.Time = password.Default.Time
	}
	if p.Threads == 0 {
		p.Threads = password.Default.Threads
	}
	return p
}

// readStaffConfig reads the password costs, the session timeouts and the
// impersonation sweep interval.
func readStaffConfig(d service.Deps, cfg *Config) error {
	mem, err := d.Config.Int("ALMONER_ARGON2_MEMORY_KIB", int(password.Default.MemoryKiB))
	if err != nil {
		return err
	}
	passes, err := d.Config.Int("ALMONER_ARGON2_TIME", int(password.Default.Time))
	if err != nil {
		return err
	}
	// argon2 needs at least 8 KiB per thread.
	if mem < 8 || passes < 1 {
		return fmt.Errorf("ALMONER_ARGON2_MEMORY_KIB (%d) must be at least 8 and ALMONER_ARGON2_TIME (%d) at least 1", mem, passes)
	}
	cfg.Password = password.Params{MemoryKiB: uint32(mem), Time: uint32(passes), Threads: password.Default.Threads}
	if cfg.SessionIdle, err = d.Config.Duration("ALMONER_SESSION_IDLE", DefaultSessionIdle); err != nil {
		return err
	}
	if cfg.SessionLifetime, err = d.Config.Duration("ALMONER_SESSION_LIFETIME", DefaultSessionLifetime); err != nil {
		return err
	}
	if cfg.ImpersonationSweep, err = d.Config.Duration("ALMONER_IMPERSONATION_SWEEP", impersonation.DefaultSweepInterval); err != nil {
		return err
	}
	cfg.Retention, err = readRetention(d.Config)
	return err
}
