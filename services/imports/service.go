// Package imports is the imports service: bulk imports of contacts and
// gifts (CSV or JSON Lines, up to 1 GiB). An upload is stored in
// PostgreSQL in chunks, so any replica can run it; a runner in every
// replica claims queued imports under a lease, validates every row (pass
// 1), then sends the valid rows in batches to the contacts and orders
// services (pass 2), saving counts, errors and a checkpoint per batch, so
// an import resumes after a crash without counting or writing a row twice.
package imports

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/importrows"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/imports/migrations"
	"github.com/almoner/almoner/services/imports/store"
)

// Name is the service's name in --target.
const Name = "imports"

// The services an import writes through, dialled by name.
const (
	ContactsService = "contacts"
	OrdersService   = "orders"
)

// Defaults of Config.
const (
	DefaultMaxBytes  = 1 << 30
	DefaultLease     = 30 * time.Second
	DefaultPoll      = time.Second
	DefaultBatch     = 5000
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 30 * time.Second
	// MaxBatch is the most rows the contacts and orders services take in
	// one call.
	MaxBatch = 10000
)

// Config is the imports service's configuration.
type Config struct {
	// MaxBytes is the largest file accepted (ALMONER_IMPORTS_MAX_BYTES).
	MaxBytes int64
	// Lease is how long a runner's claim on an import lasts without
	// renewal (ALMONER_IMPORTS_LEASE); a runner renews it every third of
	// it, and a replica that dies leaves it to run out.
	Lease time.Duration
	// Poll is how often an idle runner looks for an import
	// (ALMONER_IMPORTS_POLL).
	Poll time.Duration
	// Batch is the number of valid rows sent per call to the contacts or
	// orders service (ALMONER_IMPORTS_BATCH, at most MaxBatch).
	Batch int
	// RetryBase and RetryMax bound the wait before a batch is sent again
	// after a transient failure (a service unavailable): doubling from
	// RetryBase up to RetryMax.
	RetryBase time.Duration
	RetryMax  time.Duration
	// NoRunner turns the runner off in this process (API-only replicas;
	// ALMONER_IMPORTS_RUNNER=false).
	NoRunner bool
	// ImportRowsRetention is how long the contacts and orders services
	// keep an import's rows (ALMONER_IMPORT_ROWS_RETENTION, retention.go):
	// an import that started longer ago (less ResumeMargin) does not
	// resume, it fails.
	ImportRowsRetention time.Duration
}

// ConfigFrom reads the settings from src (ALMONER_IMPORTS_*).
func ConfigFrom(src config.Source) (Config, error) {
	var cfg Config
	var err error
	maxBytes, err := src.Int("ALMONER_IMPORTS_MAX_BYTES", DefaultMaxBytes)
	if err != nil {
		return cfg, err
	}
	cfg.MaxBytes = int64(maxBytes)
	for _, d := range []struct {
		key string
		def time.Duration
		dst *time.Duration
	}{
		{"ALMONER_IMPORTS_LEASE", DefaultLease, &cfg.Lease},
		{"ALMONER_IMPORTS_POLL", DefaultPoll, &cfg.Poll},
		{"ALMONER_IMPORTS_RETRY_BASE", DefaultRetryBase, &cfg.RetryBase},
		{"ALMONER_IMPORTS_RETRY_MAX", DefaultRetryMax, &cfg.RetryMax},
	} {
		if *d.dst, err = src.Duration(d.key, d.def); err != nil {
			return cfg, err
		}
	}
	if cfg.Batch, err = src.Int("ALMONER_IMPORTS_BATCH", DefaultBatch); err != nil {
		return cfg, err
	}
	if cfg.Batch < 1 || cfg.Batch > MaxBatch {
		return cfg, fmt.Errorf("ALMONER_IMPORTS_BATCH: %d is not between 1 and %d", cfg.Batch, MaxBatch)
	}
	if cfg.ImportRowsRetention, err = importrows.Retention(src); err != nil {
		return cfg, err
	}
	run, err := src.Bool("ALMONER_IMPORTS_RUNNER", true)
	cfg.NoRunner = !run
	return cfg, err
}

func (cfg Config) withDefaults() Config {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Batch <= 0 || cfg.Batch > MaxBatch {
		cfg.Batch = DefaultBatch
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax < cfg.RetryBase {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryBase)
	}
	if cfg.ImportRowsRetention <= 0 {
		cfg.ImportRowsRetention = importrows.DefaultRetention
	}
	return cfg
}

// Migrations are the schemas the service needs: the audit log and its own.
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), migrations.Set()}
}

// Service is the imports service.
type Service struct {
	cfg    Config
	store  *store.Store
	logger *slog.Logger
	// contacts and orders are dialled on the first import that needs them.
	contacts, orders *service.Upstream
	runner           *runner
}

// clients are the calls an import makes.
type clients struct {
	contacts contactsv1.ContactImportServiceClient
	gifts    ordersv1.GiftImportServiceClient
}

// New returns the imports service on pool. dial reaches the contacts and
// orders services by name (service.Deps.Dial), on the first import that
// needs them.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger, dial func(string) (grpc.ClientConnInterface, error)) *Service {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{cfg: cfg.withDefaults(), store: store.New(pool), logger: logger,
		contacts: service.NewUpstream(dial, ContactsService), orders: service.NewUpstream(dial, OrdersService)}
	s.runner = newRunner(s, "")
	return s
}

// Register adds the service's gRPC server to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	importsv1.RegisterImportServiceServer(r, &server{s: s})
}

// Start starts the runner unless Config.NoRunner.
func (s *Service) Start(context.Context) error {
	if !s.cfg.NoRunner {
		s.runner.start()
	}
	return nil
}

// Stop stops the runner; the import in hand keeps its checkpoint, and its
// lease runs out for another replica or the next start.
func (s *Service) Stop(ctx context.Context) error {
	return s.runner.stop(ctx)
}

// importClients returns the contacts and orders clients.
func (s *Service) importClients() (clients, error) {
	cc, err := s.contacts.Conn()
	if err != nil {
		return clients{}, err
	}
	oc, err := s.orders.Conn()
	if err != nil {
		return clients{}, err
	}
	return clients{contacts: contactsv1.NewContactImportServiceClient(cc), gifts: ordersv1.NewGiftImportServiceClient(oc)}, nil
}

// Module describes the imports service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(ctx context.Context, d service.Deps) (service.Service, error) {
		cfg, err := ConfigFrom(d.Config)
		if err != nil {
			return nil, err
		}
		return New(d.DB, cfg, d.Logger, d.Dial), nil
	},
}
