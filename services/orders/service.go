// Package orders is the orders service: how every gift and item sale is
// recorded. It owns funds, batches, orders with their donation and item
// lines and payments, refunds, idempotency records and recurring schedules
// with their charge runner, and answers the contact dashboard's giving
// summary (GivingService).
package orders

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/importrows"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/orders/changes"
	"github.com/almoner/almoner/services/orders/checkout"
	"github.com/almoner/almoner/services/orders/fulfillment"
	"github.com/almoner/almoner/services/orders/migrations"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
	"github.com/almoner/almoner/services/orders/procevents"
	"github.com/almoner/almoner/services/orders/recurring"
	"github.com/almoner/almoner/services/orders/reference"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/importstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// Name is the service's name in --target.
const Name = "orders"

// Migrations are the schemas the service needs: the audit log and its own.
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), migrations.Set()}
}

// Config is the orders service's configuration and dependencies.
type Config struct {
	// Contacts checks contacts and saves addresses to them.
	Contacts peers.Contacts
	// Stock reserves and releases inventory for item lines.
	Stock peers.Stock
	// Shipments creates an order's shipment in the inventory service from
	// its outbox row, and lists an order's shipments; nil leaves the rows
	// to a process that has it.
	Shipments peers.Shipments
	// Processors finds each tenant's payment processor for Card and Ach
	// payments: its Stripe account, or in the sandbox the test processor;
	// nil means none, which makes such payments a 400.
	Processors tenantproc.Source
	// Now is the clock; time.Now when nil. Tests move it.
	Now func() time.Time
	// IdempotencyLease is how long a claimed key is held by a request
	// before a retry may take it over (a crashed owner).
	IdempotencyLease time.Duration
	// Runner configures the recurring charge runner; nil means it does not run.
	Runner *recurring.RunnerConfig
	// Sweeper configures the sweeper of abandoned keyed-order claims; nil
	// means it does not run.
	Sweeper *checkout.SweeperConfig
	// Tenants reads a tenant's default currency for gift imports whose
	// principal carries none; nil means such rows need their currency.
	Tenants peers.Tenants
	// ChargeLease is how long the runner holds a claimed installment
	// while it charges it (DefaultChargeLease when 0).
	ChargeLease time.Duration
	// Calendar reads a tenant's time zone, in which a gift's date is
	// bounded by today; nil means UTC.
	Calendar peers.Calendar
	// FiscalCalendars reads tenants' time zones and fiscal years, of which
	// the housekeeping keeps a copy for the giving summaries' local
	// periods; nil keeps none (no period rows: readers use the gifts).
	FiscalCalendars peers.FiscalCalendars
	// Settings reads and writes the tenant's recurring retry days, which
	// the auth service owns; nil leaves orders.recurring_settings, the
	// copy the runner reads in its transactions, as it is (tests).
	Settings peers.Settings
	// ImportRowsRetention is how long orders.import_rows keeps an imported
	// row's outcome (ALMONER_IMPORT_ROWS_RETENTION, importrows.go); the
	// runner's housekeeping prunes older rows. importrows.DefaultRetention
	// when 0.
	ImportRowsRetention time.Duration
}

// Service is the orders service.
type Service struct {
	store *store.Store
	// imports records gift imports (and prunes their rows).
	imports *importstore.Store
	cfg     Config
	logger  *slog.Logger
	runner  *recurring.Runner
	// checkout records orders made through the API.
	checkout *checkout.Service
	// recurring serves schedules and charges their installments.
	recurring *recurring.Service
	// events applies processor notifications.
	events *procevents.Server
	// changes refunds and voids orders.
	changes *changes.Server
	sweeper *checkout.Sweeper
	// outbox hands item orders' shipments to the inventory service.
	outbox *fulfillment.Outbox
}

// New returns the orders service on pool.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdempotencyLease <= 0 {
		cfg.IdempotencyLease = 30 * time.Second
	}
	if cfg.ImportRowsRetention <= 0 {
		cfg.ImportRowsRetention = importrows.DefaultRetention
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{store: store.New(pool), cfg: cfg, logger: logger}
	s.imports = importstore.New(s.store)
	s.outbox = fulfillment.New(s.store, cfg.Shipments, cfg.Now, logger)
	s.events = procevents.New(s.store, s.processors(), cfg.Stock, cfg.Now, logger)
	s.checkout = checkout.New(checkout.Deps{Store: s.store, Processors: s.processors(), Contacts: cfg.Contacts, Stock: cfg.Stock,
		Outbox: s.outbox, Now: cfg.Now, IdempotencyLease: cfg.IdempotencyLease, Logger: logger})
	s.recurring = recurring.New(s.store, s.processors(), cfg.Now, cfg.ChargeLease, logger)
	s.recurring.UseSettings(cfg.Settings)
	s.events.UseSettings(cfg.Settings)
	s.changes = changes.New(s.store, s.processors(), cfg.Stock, s.chargeLease(), logger)
	if cfg.Runner != nil {
		s.runner = s.NewRunner(*cfg.Runner)
	}
	if cfg.Sweeper != nil {
		s.sweeper = s.NewSweeper(*cfg.Sweeper)
	}
	return s
}

// Store exposes the store to tests and tools of this module.
func (s *Service) Store() *store.Store { return s.store }

// Register adds the service's gRPC servers to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	ordersv1.RegisterOrderServiceServer(r, &orderServer{s: s})
	ordersv1.RegisterFundServiceServer(r, reference.NewFundServer(s.store))
	ordersv1.RegisterBatchServiceServer(r, reference.NewBatchServer(s.store))
	ordersv1.RegisterRecurringDonationServiceServer(r, s.recurring.ScheduleServer())
	ordersv1.RegisterRecurringSettingsServiceServer(r, s.recurring.SettingsServer())
	ordersv1.RegisterGivingServiceServer(r, &givingServer{s: s})
	ordersv1.RegisterPaymentMethodServiceServer(r, &paymentMethodServer{s: s})
	ordersv1.RegisterProcessorNotificationServiceServer(r, s.events)
	ordersv1.RegisterContactMoveServiceServer(r, &contactMoveServer{s: s})
	ordersv1.RegisterGiftImportServiceServer(r, &giftImportServer{s: s})
	ordersv1.RegisterOrderAcknowledgementServiceServer(r, &acknowledgementServer{s: s})
	ordersv1.RegisterAcknowledgementClaimServiceServer(r, &acknowledgementServer{s: s})
}

// Start starts the recurring charge runner and the sweeper of abandoned
// claims when configured.
func (s *Service) Start(context.Context) error {
	if s.runner != nil {
		s.runner.Start()
	}
	if s.sweeper != nil {
		s.sweeper.Start()
	}
	return nil
}

// Stop stops the runner, letting its current charge finish, and the
// sweeper, whose claim in hand is swept again after its lease.
func (s *Service) Stop(ctx context.Context) error {
	var errs []error
	if s.runner != nil {
		errs = append(errs, s.runner.Stop(ctx))
	}
	if s.sweeper != nil {
		errs = append(errs, s.sweeper.Stop(ctx))
	}
	return errors.Join(errs...)
}

// Module describes the orders service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(ctx context.Context, d service.Deps) (service.Service, error) {
		interval, err := d.Config.Duration("ALMONER_ORDERS_RUNNER_INTERVAL", time.Minute)
		if err != nil {
			return nil, err
		}
		runnerOn, err := d.Config.Bool("ALMONER_ORDERS_RUNNER", true)
		if err != nil {
			return nil, err
		}
		abandonAfter, err := checkout.AbandonedOrderAfter(d.Config)
		if err != nil {
			return nil, err
		}
		retention, err := importrows.Retention(d.Config)
		if err != nil {
			return nil, err
		}
		// Other services are dialled lazily: a process hosting orders alone
		// may start before them, and each call says when one is missing.
		dial := lazyConn(d.Dial)
		cfg := Config{
			ImportRowsRetention: retention,
			Contacts: peers.GRPCContacts{Conn: func() (contactsv1.ContactDirectoryServiceClient, error) {
				conn, err := dial("contacts")
				if err != nil {
					return nil, err
				}
				return contactsv1.NewContactDirectoryServiceClient(conn), nil
			}},
			Stock: peers.GRPCStock{Conn: func() (inventoryv1.StockReservationServiceClient, error) {
				conn, err := dial("inventory")
				if err != nil {
					return nil, err
				}
				return inventoryv1.NewStockReservationServiceClient(conn), nil
			}},
			Shipments: peers.GRPCShipments{Conn: func() (inventoryv1.ShipmentCreationServiceClient, error) {
				conn, err := dial("inventory")
				if err != nil {
					return nil, err
				}
				return inventoryv1.NewShipmentCreationServiceClient(conn), nil
			}},
		}
		// Each tenant's processor is read from auth (which keeps the keys
		// sealed) and kept under auth's validation epoch, which every
		// processor change moves (tenantproc.Cached); a sandbox tenant
		// without Stripe keeps the documented test processor.
		cfg.Processors = tenantproc.NewCached(tenantproc.AuthSource{
			Conn:    func() (grpc.ClientConnInterface, error) { return dial("auth") },
			APIBase: d.Config.String("ALMONER_STRIPE_API_BASE", stripeproc.DefaultAPIBase),
			Sandbox: d.Environment != "production",
			HTTP:    stripeproc.NewHTTPClient(),
		}, func() (authv1.KeyValidationServiceClient, error) {
			conn, err := dial("auth")
			if err != nil {
				return nil, err
			}
			return authv1.NewKeyValidationServiceClient(conn), nil
		})
		cfg.Tenants = peers.GRPCTenants{Conn: func() (authv1.TenantAdminServiceClient, error) {
			conn, err := dial("auth")
			if err != nil {
				return nil, err
			}
			return authv1.NewTenantAdminServiceClient(conn), nil
		}}
		// The tenant settings (time zone, retry days) are the auth
		// service's, read outside any transaction.
		tenantSettings := peers.GRPCSettings{Conn: func() (authv1.TenantSettingsServiceClient, error) {
			conn, err := dial("auth")
			if err != nil {
				return nil, err
			}
			return authv1.NewTenantSettingsServiceClient(conn), nil
		}}
		cfg.Calendar, cfg.Settings, cfg.FiscalCalendars = tenantSettings, tenantSettings, tenantSettings
		// The runner's switch turns on both background jobs: each replica
		// may run them (schedules and claims are taken under locks).
		if runnerOn {
			cfg.Runner = &recurring.RunnerConfig{Interval: interval}
			cfg.Sweeper = &checkout.SweeperConfig{Interval: interval, After: abandonAfter}
		}
		return New(d.DB, cfg, d.Logger), nil
	},
}

func lazyConn(dial func(string) (grpc.ClientConnInterface, error)) func(string) (grpc.ClientConnInterface, error) {
	return func(name string) (grpc.ClientConnInterface, error) {
		if dial == nil {
			return nil, errors.New("no dialer")
		}
		return dial(name)
	}
}

// byName returns the processor that collected a payment
// (tenantproc.ByName).
func (s *Service) byName(ctx context.Context, tenantID, name string) (processor.Processor, error) {
	return tenantproc.ByName(ctx, s.processors(), tenantID, name)
}

// processors is the configured source, or one that reports none, behind
// the guard that no call runs inside a transaction.
func (s *Service) processors() tenantproc.Source {
	if s.cfg.Processors == nil {
		return tenantproc.Guard(tenantproc.Static{})
	}
	return tenantproc.Guard(s.cfg.Processors)
}

// NewRunner returns a runner of the recurring room whose passes end with
// the service's housekeeping.
func (s *Service) NewRunner(cfg recurring.RunnerConfig) *recurring.Runner {
	cfg.Housekeep = (&housekeeper{s: s}).run
	return s.recurring.NewRunner(cfg)
}

// chargeLease is how long a claim of a processor call is held: an
// installment's charge, a refund's or void's calls.
func (s *Service) chargeLease() time.Duration {
	if s.cfg.ChargeLease > 0 {
		return s.cfg.ChargeLease
	}
	return recurring.DefaultChargeLease
}

// NewSweeper returns the checkout room's sweeper of abandoned keyed-order
// claims, whose sweeps end with the finishing of refunds and voids left
// in flight.
func (s *Service) NewSweeper(cfg checkout.SweeperConfig) *checkout.Sweeper {
	cfg.AfterSweep = func(ctx context.Context) {
		s.finishChanges(ctx)
		s.deliverShipments(ctx)
	}
	return s.checkout.NewSweeper(cfg)
}

// finishChanges finishes the refunds and voids left in flight (changes.Server.Finish).
func (s *Service) finishChanges(ctx context.Context) {
	if _, err := s.changes.Finish(ctx, s.chargeLease()); err != nil && ctx.Err() == nil {
		s.logger.ErrorContext(ctx, "finish refunds and voids left in flight", "error", err)
	}
}
