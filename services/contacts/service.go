// Package contacts is the contacts service: a tenant's contacts with their
// phones, emails, addresses, tags, preferences and relationships; duplicate
// detection; merging (merge.go, docs/merge.md); bulk imports of contacts
// (imports.go, for the imports service); the contact dashboard (giving figures come from the orders
// service over gRPC); the contact's audit feed; and the public contact form
// with its per-IP rate limit.
package contacts

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/importrows"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/contacts/migrations"
	"github.com/almoner/almoner/services/contacts/store"
)

// Name is the service's name in --target.
const Name = "contacts"

// OrdersService is the name the dashboard dials for giving figures.
const OrdersService = "orders"

// InventoryService is the name a merge dials to move shipments.
const InventoryService = "inventory"

// Config is the contacts service's configuration.
type Config struct {
	// PruneInterval is how often expired rate-limit counters are deleted.
	PruneInterval time.Duration
	// GivingTimeout bounds the dashboard's call to the orders service.
	GivingTimeout time.Duration
	// MergeRecoveryInterval is how often pending merges are looked for.
	MergeRecoveryInterval time.Duration
	// MergeRecoveryAge is how long a merge stays pending before the
	// recovery loop finishes it (docs/merge.md): longer than a merge
	// request takes, so the loop does not race live requests (it would
	// be harmless, only wasted work).
	MergeRecoveryAge time.Duration
	// ImportRowsRetention is how long contacts.import_rows keeps an
	// imported row's outcome (ALMONER_IMPORT_ROWS_RETENTION, importrows.go);
	// older rows are pruned every PruneInterval.
	ImportRowsRetention time.Duration
}

// DefaultConfig returns the defaults: prune every 10 minutes, a 5 s giving
// call, merges pending for a minute finished every 30 s, import rows kept
// 30 days.
func DefaultConfig() Config {
	return Config{PruneInterval: 10 * time.Minute, GivingTimeout: 5 * time.Second,
		MergeRecoveryInterval: 30 * time.Second, MergeRecoveryAge: time.Minute, ImportRowsRetention: importrows.DefaultRetention}
}

// Migrations are the schemas the service needs: the audit log, the
// rate-limit counters and its own.
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), ratelimit.Migrations(), migrations.Set()}
}

// Service is the contacts service.
type Service struct {
	cfg     Config
	store   *store.Store
	limiter *ratelimit.Limiter
	logger  *slog.Logger
	orders  *service.Upstream // dialled on the first dashboard or merge
	// inventory is dialled on the first merge.
	inventory *service.Upstream
	// auth is dialled on the first contact assigned to a staff user.
	auth    *service.Upstream
	reports *service.Upstream

	stop context.CancelFunc
	done chan struct{}
}

// New returns the contacts service on pool. dial reaches other services by
// name (service.Deps.Dial); the orders service is dialled on the first
// dashboard and the inventory service on the first merge, so contacts
// starts even where they are not configured.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger, dial func(string) (grpc.ClientConnInterface, error)) *Service {
	def := DefaultConfig()
	if cfg.PruneInterval <= 0 {
		cfg.PruneInterval = def.PruneInterval
	}
	if cfg.GivingTimeout <= 0 {
		cfg.GivingTimeout = def.GivingTimeout
	}
	if cfg.MergeRecoveryInterval <= 0 {
		cfg.MergeRecoveryInterval = def.MergeRecoveryInterval
	}
	if cfg.MergeRecoveryAge <= 0 {
		cfg.MergeRecoveryAge = def.MergeRecoveryAge
	}
	if cfg.ImportRowsRetention <= 0 {
		cfg.ImportRowsRetention = def.ImportRowsRetention
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{cfg: cfg, store: store.New(pool), limiter: ratelimit.New(pool), logger: logger,
		orders: service.NewUpstream(dial, OrdersService), inventory: service.NewUpstream(dial, InventoryService),
		auth: service.NewUpstream(dial, AuthService), reports: service.NewUpstream(dial, ReportsService)}
}

// Register adds the service's gRPC servers to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	contactsv1.RegisterContactServiceServer(r, &contactServer{s: s})
	contactsv1.RegisterContactFormServiceServer(r, &formServer{s: s})
	contactsv1.RegisterContactFormAdminServiceServer(r, &formAdminServer{s: s})
	contactsv1.RegisterContactDirectoryServiceServer(r, &directoryServer{s: s})
	contactsv1.RegisterContactImportServiceServer(r, &importServer{s: s})
}

// Start runs the pruner of rate-limit counters and import rows and the
// merge recovery loop until Stop.
func (s *Service) Start(ctx context.Context) error {
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		prune := time.NewTicker(s.cfg.PruneInterval)
		defer prune.Stop()
		merges := time.NewTicker(s.cfg.MergeRecoveryInterval)
		defer merges.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-prune.C:
				// Keep an hour of ended windows: nothing reads them, but a
				// little slack costs nothing and helps an operator looking.
				if _, err := s.limiter.Prune(ctx, time.Now().Add(-time.Hour)); err != nil {
					s.logger.Warn("prune rate-limit counters", "error", err)
				}
				if err := s.pruneImportRows(ctx); err != nil && ctx.Err() == nil {
					s.logger.Warn("prune import rows", "error", err)
				}
			case <-merges.C:
				if err := s.recoverMerges(ctx); err != nil {
					s.logger.Warn("finish pending merges", "error", err)
				}
			}
		}
	}()
	return nil
}

// Stop ends the background loops.
func (s *Service) Stop(context.Context) error {
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	return nil
}

// givingClient returns the orders service's GivingService client.
func (s *Service) givingClient() (ordersv1.GivingServiceClient, error) {
	conn, err := s.orders.Conn()
	if err != nil {
		return nil, err
	}
	return ordersv1.NewGivingServiceClient(conn), nil
}

// moveClient returns the orders service's ContactMoveService client.
func (s *Service) moveClient() (ordersv1.ContactMoveServiceClient, error) {
	conn, err := s.orders.Conn()
	if err != nil {
		return nil, err
	}
	return ordersv1.NewContactMoveServiceClient(conn), nil
}

// shipmentMoveClient returns the inventory service's
// ShipmentContactMoveService client.
func (s *Service) shipmentMoveClient() (inventoryv1.ShipmentContactMoveServiceClient, error) {
	conn, err := s.inventory.Conn()
	if err != nil {
		return nil, err
	}
	return inventoryv1.NewShipmentContactMoveServiceClient(conn), nil
}

// Module describes the contacts service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(ctx context.Context, d service.Deps) (service.Service, error) {
		cfg := DefaultConfig()
		var err error
		if cfg.PruneInterval, err = d.Config.Duration("ALMONER_RATELIMIT_PRUNE_INTERVAL", cfg.PruneInterval); err != nil {
			return nil, err
		}
		if cfg.GivingTimeout, err = d.Config.Duration("ALMONER_CONTACTS_GIVING_TIMEOUT", cfg.GivingTimeout); err != nil {
			return nil, err
		}
		if cfg.MergeRecoveryInterval, err = d.Config.Duration("ALMONER_CONTACTS_MERGE_RECOVERY_INTERVAL", cfg.MergeRecoveryInterval); err != nil {
			return nil, err
		}
		if cfg.MergeRecoveryAge, err = d.Config.Duration("ALMONER_CONTACTS_MERGE_RECOVERY_AGE", cfg.MergeRecoveryAge); err != nil {
			return nil, err
		}
		if cfg.ImportRowsRetention, err = importrows.Retention(d.Config); err != nil {
			return nil, err
		}
		return New(d.DB, cfg, d.Logger, d.Dial), nil
	},
}
