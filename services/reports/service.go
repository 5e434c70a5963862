// Package reports is the reports service: the pre-built report types, the
// tenant's saved report definitions, their runs (recorded) and their
// exports as CSV, Excel and PDF. It reads other services' data only through
// the read-only views they publish in their own migrations.
package reports

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
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
}

// Service is the reports service.
type Service struct {
	store  *store.Store
	cfg    Config
	logger *slog.Logger
}

// New returns the reports service on pool.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{store: store.New(pool), cfg: cfg, logger: logger}
}

// Store exposes the store to tests of this module.
func (s *Service) Store() *store.Store { return s.store }

// Register adds the service's gRPC server to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	reportsv1.RegisterReportServiceServer(r, &server{s: s})
	reportsv1.RegisterOrganizationProfileServiceServer(r, &profileServer{s: s})
	reportsv1.RegisterReceiptServiceServer(r, &receiptServer{s: s})
}

// Start does nothing: the service has no background work.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing.
func (s *Service) Stop(context.Context) error { return nil }

// Module describes the reports service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(_ context.Context, d service.Deps) (service.Service, error) {
		return New(d.DB, Config{}, d.Logger), nil
	},
}
