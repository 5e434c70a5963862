// Package reports is the reports service: the pre-built report types, the
// tenant's saved report definitions, their runs (recorded) and their
// exports as CSV, Excel and PDF. It reads other services' data only through
// the read-only views they publish in their own migrations.
package reports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/pkg/tenantsettings"
	"github.com/almoner/almoner/services/reports/branding"
	"github.com/almoner/almoner/services/reports/cohorts"
	"github.com/almoner/almoner/services/reports/dashboard"
	"github.com/almoner/almoner/services/reports/fulfillment"
	"github.com/almoner/almoner/services/reports/letters"
	"github.com/almoner/almoner/services/reports/migrations"
	"github.com/almoner/almoner/services/reports/store"
	"github.com/almoner/almoner/services/reports/templates"
)

// Name is the service's name in --target.
const Name = "reports"

// Migrations are the schemas the service migrates: the audit log and its
// own. The views it reads are published by the contacts, inventory and
// orders migrations, which their owners apply: the binary declares that
// reports needs them and checks at start-up that they are there
// (cmd/almoner/internal/app, Needs).
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), mail.Migrations(), migrations.Set()}
}

// Config is the reports service's configuration.
type Config struct {
	// Now is the clock (parameter defaults, generation times); time.Now
	// when nil.
	Now func() time.Time
	// TaxRunPoll is how often an idle replica looks for a year-end run to
	// make (1s when zero); TaxRunLease how long a replica holds one
	// without renewing it (30s); TaxRunBatch how many donors a batch
	// makes before it saves them (100). Tests shorten them.
	TaxRunPoll  time.Duration
	TaxRunLease time.Duration
	TaxRunBatch int
	// NoTaxRunner leaves the year-end runner off (tests that drive it).
	NoTaxRunner bool
	// LetterRunLease and LetterRunBatch tune the letter runner (30s, 100
	// gifts); NoLetterRunner leaves it off. Tests shorten them.
	LetterRunLease time.Duration
	LetterRunBatch int
	NoLetterRunner bool
	// Dial reaches the other services: the orders service acknowledges a
	// letter run's gifts, auth answers memberships. Nil: none reachable
	// (claims answer 503).
	Dial func(service string) (grpc.ClientConnInterface, error)
	// Zones reads and sets the tenant's time zone, the tenant settings'
	// (the auth service's); nil: the profile's own column (this module's
	// tests).
	Zones Zones
}

// Service is the reports service.
type Service struct {
	store     *store.Store
	brand     *branding.Store
	templates *templates.Store
	cfg       Config
	logger    *slog.Logger
	runner    *taxRunner

	letterStore  *letters.Store
	letterRunner *letters.Runner
	dashStore    *dashboard.Store
	cohortStore  *cohorts.Store
	cohorts      *cohorts.Server
	// auth is the auth service, dialled once: tenant settings and
	// memberships. cal reads tenants' calendars through it.
	auth *service.Upstream
	cal  dashboard.Calendars
}

// New returns the reports service on pool.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{store: store.New(pool), brand: branding.NewStore(pool), templates: templates.NewStore(pool), cfg: cfg, logger: logger}
	s.runner = newTaxRunner(s)
	s.auth = service.NewUpstream(cfg.Dial, "auth")
	s.cal = s.calendars()
	s.letterStore = letters.NewStore(pool)
	s.dashStore = dashboard.NewStore(pool)
	s.cohortStore = cohorts.NewStore(pool)
	s.cohorts = cohorts.NewServer(s.cohortStore, s)
	s.letterStore.Members = s.cohorts.Members
	claimer := letters.GRPCClaimer{Orders: service.NewUpstream(cfg.Dial, "orders")}
	s.letterRunner = letters.NewRunner(s.letterStore, s.templates, s, claimer,
		letters.RunnerConfig{Poll: cfg.TaxRunPoll, Lease: cfg.LetterRunLease, Batch: cfg.LetterRunBatch, Now: cfg.Now}, logger)
	return s
}

// Store exposes the store to tests of this module.
func (s *Service) Store() *store.Store { return s.store }

// Register adds the service's gRPC server to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	reportsv1.RegisterReportServiceServer(r, &server{s: s})
	reportsv1.RegisterOrganizationProfileServiceServer(r, &profileServer{s: s})
	reportsv1.RegisterReceiptServiceServer(r, &receiptServer{s: s})
	reportsv1.RegisterTaxStatementServiceServer(r, &taxRunServer{s: s})
	reportsv1.RegisterBrandingServiceServer(r, branding.NewServer(s.brand))
	ts := templates.NewServer(s.templates, s)
	ts.InUse = letters.TemplateInUse
	reportsv1.RegisterDocumentTemplateServiceServer(r, ts)
	ls := letters.NewServer(s.letterStore, s.templates, s)
	ls.Queued = s.letterRunner.Poke
	reportsv1.RegisterLetterRunServiceServer(r, ls)
	reportsv1.RegisterFulfillmentDocumentServiceServer(r, fulfillment.New(s.store, s.brand, s.Profile))
	reportsv1.RegisterDashboardServiceServer(r, dashboard.NewServer(s.dashStore,
		s.cal, s.auth, s.cfg.Now))
	reportsv1.RegisterCohortServiceServer(r, s.cohorts)
}

// calendars is where the dashboard and cohorts read a tenant's calendar: its
// settings (the auth service's) when auth is reachable, else the
// profile's time zone and a January fiscal year (this module's tests).
func (s *Service) calendars() dashboard.Calendars {
	zone := func(ctx context.Context, tenant uuid.UUID) (*time.Location, error) {
		p, err := s.profile(ctx, tenant)
		return location(p), err
	}
	c := dashboard.Calendars{Zone: zone}
	if s.cfg.Dial != nil {
		c.Settings = func(ctx context.Context, tenant uuid.UUID) (tenantsettings.Settings, error) {
			return tenantsettings.Reader{Conn: s.auth.Conn, Actor: "reports:calendar"}.Get(ctx, tenant.String())
		}
	}
	return c
}

// Start starts the year-end runner, which makes the tax statement runs
// this replica claims.
func (s *Service) Start(context.Context) error {
	if !s.cfg.NoTaxRunner {
		s.runner.start()
	}
	if !s.cfg.NoLetterRunner {
		s.letterRunner.Start()
	}
	return nil
}

// Stop stops the runner; a run it was making is taken up again, from its
// last saved batch, once its lease runs out.
func (s *Service) Stop(ctx context.Context) error {
	return errors.Join(s.runner.stop(ctx), s.letterRunner.Stop(ctx))
}

// Module describes the reports service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(_ context.Context, d service.Deps) (service.Service, error) {
		cfg, err := configFrom(d.Config)
		if err != nil {
			return nil, err
		}
		cfg.Dial = d.Dial
		cfg.Zones = GRPCZones{Auth: service.NewUpstream(d.Dial, "auth")}
		s := New(d.DB, cfg, d.Logger)
		s.store.WithReads(d.Reads)
		s.letterStore.WithReads(d.Reads)
		s.dashStore.WithReads(d.Reads)
		s.cohortStore.WithReads(d.Reads)
		return s, nil
	},
}

// configFrom reads the year-end runner's settings: ALMONER_TAX_RUNNER
// (true: this replica makes runs; false for API-only replicas),
// ALMONER_TAX_RUN_LEASE (30s) and ALMONER_TAX_RUN_BATCH (100 donors).
func configFrom(src config.Source) (Config, error) {
	var cfg Config
	if src == nil {
		return cfg, nil
	}
	on, err := src.Bool("ALMONER_TAX_RUNNER", true)
	if err != nil {
		return cfg, err
	}
	cfg.NoTaxRunner = !on
	if cfg.TaxRunLease, err = src.Duration("ALMONER_TAX_RUN_LEASE", defaultTaxRunLease); err != nil {
		return cfg, err
	}
	if cfg.TaxRunBatch, err = src.Int("ALMONER_TAX_RUN_BATCH", defaultTaxRunBatch); err != nil {
		return cfg, err
	}
	if err := letterRunnerConfig(src, &cfg); err != nil {
		return cfg, err
	}
	if cfg.TaxRunLease < time.Second || cfg.TaxRunBatch < 1 || cfg.TaxRunBatch > 1000 {
		return cfg, fmt.Errorf("ALMONER_TAX_RUN_LEASE must be at least 1s and ALMONER_TAX_RUN_BATCH 1 to 1000 (%s, %d)", cfg.TaxRunLease, cfg.TaxRunBatch)
	}
	return cfg, nil
}

// letterRunnerConfig reads ALMONER_LETTER_RUNNER (true: this replica
// makes letter runs; false for API-only replicas), ALMONER_LETTER_RUN_LEASE
// (30s) and ALMONER_LETTER_RUN_BATCH (100 gifts).
func letterRunnerConfig(src config.Source, cfg *Config) error {
	on, err := src.Bool("ALMONER_LETTER_RUNNER", true)
	if err != nil {
		return err
	}
	cfg.NoLetterRunner = !on
	if cfg.LetterRunLease, err = src.Duration("ALMONER_LETTER_RUN_LEASE", letters.DefaultLease); err != nil {
		return err
	}
	if cfg.LetterRunBatch, err = src.Int("ALMONER_LETTER_RUN_BATCH", letters.DefaultBatch); err != nil {
		return err
	}
	if cfg.LetterRunLease < time.Second || cfg.LetterRunBatch < 1 || cfg.LetterRunBatch > 1000 {
		return fmt.Errorf("ALMONER_LETTER_RUN_LEASE must be at least 1s and ALMONER_LETTER_RUN_BATCH 1 to 1000 (%s, %d)", cfg.LetterRunLease, cfg.LetterRunBatch)
	}
	return nil
}
