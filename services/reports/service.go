// Package reports is the reports service: the pre-built report types, the
// tenant's saved report definitions, their runs (recorded) and their
// exports as CSV, Excel and PDF. It reads other services' data only through
// the read-only views they publish in their own migrations.
package reports

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/reports/fulfillment"
	"github.com/almoner/almoner/services/reports/migrations"
	"github.com/almoner/almoner/services/reports/store"
)

// Name is the service's name in --target.
const Name = "reports"

// Migrations are the schemas the service migrates: the audit log and its
// own. The views it reads are published by the contacts, inventory and
// orders migrations, which their owners apply: the binary declares that
// reports needs them and checks at start-up that they are there
// (cmd/almoner/internal/app, Needs).
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), migrations.Set()}
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
}

// Service is the reports service.
type Service struct {
	store  *store.Store
	cfg    Config
	logger *slog.Logger
	runner *taxRunner
}

// New returns the reports service on pool.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{store: store.New(pool), cfg: cfg, logger: logger}
	s.runner = newTaxRunner(s)
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
	reportsv1.RegisterFulfillmentDocumentServiceServer(r, fulfillment.New(s.store))
}

// Start starts the year-end runner, which makes the tax statement runs
// this replica claims.
func (s *Service) Start(context.Context) error {
	if !s.cfg.NoTaxRunner {
		s.runner.start()
	}
	return nil
}

// Stop stops the runner; a run it was making is taken up again, from its
// last saved batch, once its lease runs out.
func (s *Service) Stop(ctx context.Context) error { return s.runner.stop(ctx) }

// Module describes the reports service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(_ context.Context, d service.Deps) (service.Service, error) {
		cfg, err := configFrom(d.Config)
		if err != nil {
			return nil, err
		}
		return New(d.DB, cfg, d.Logger), nil
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
	if cfg.TaxRunLease < time.Second || cfg.TaxRunBatch < 1 || cfg.TaxRunBatch > 1000 {
		return cfg, fmt.Errorf("ALMONER_TAX_RUN_LEASE must be at least 1s and ALMONER_TAX_RUN_BATCH 1 to 1000 (%s, %d)", cfg.TaxRunLease, cfg.TaxRunBatch)
	}
	return cfg, nil
}
