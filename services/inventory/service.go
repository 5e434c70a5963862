// Package inventory is the inventory service: a tenant's items with their
// prices and stock (the public REST resource) and the stock reservations
// the orders service makes for item lines (an internal gRPC API).
package inventory

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/inventory/migrations"
	"github.com/almoner/almoner/services/inventory/store"
)

// Name is the service's name in --target.
const Name = "inventory"

// CurrencyLookup returns a tenant's default ISO 4217 currency.
type CurrencyLookup func(ctx context.Context, tenantID string) (string, error)

// Config is the inventory service's configuration.
type Config struct {
	// TenantCurrency reads a tenant's default currency, for items created
	// or replaced without one. The principal does not carry it; the auth
	// service owns it.
	TenantCurrency CurrencyLookup
	// CurrencyCacheTTL is how long a tenant's default currency is reused
	// before it is read again.
	CurrencyCacheTTL time.Duration
}

// DefaultCurrencyCacheTTL is how long a tenant's default currency is
// cached: it changes (if ever) by operator action, and a minute of
// staleness only affects items created without a currency.
const DefaultCurrencyCacheTTL = time.Minute

// Migrations are the schemas the service needs: the audit log and its own.
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), migrations.Set()}
}

// Service is the inventory service.
type Service struct {
	store    *store.Store
	currency *currencyCache
	logger   *slog.Logger
}

// New returns the inventory service on pool.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Service {
	if cfg.CurrencyCacheTTL <= 0 {
		cfg.CurrencyCacheTTL = DefaultCurrencyCacheTTL
	}
	lookup := cfg.TenantCurrency
	if lookup == nil {
		lookup = func(context.Context, string) (string, error) {
			return "", errors.New("no tenant currency lookup configured")
		}
	}
	return &Service{store: store.New(pool), currency: newCurrencyCache(lookup, cfg.CurrencyCacheTTL), logger: logger}
}

// Register adds the service's gRPC servers to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	inventoryv1.RegisterInventoryServiceServer(r, &itemServer{s: s})
	inventoryv1.RegisterStockReservationServiceServer(r, &reservationServer{s: s})
}

// Start does nothing: the service has no background work.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing: the service has no background work.
func (s *Service) Stop(context.Context) error { return nil }

// AuthCurrencyLookup reads default currencies with the auth service's
// internal TenantAdminService.GetTenant.
func AuthCurrencyLookup(client authv1.TenantAdminServiceClient) CurrencyLookup {
	return func(ctx context.Context, tenantID string) (string, error) {
		resp, err := client.GetTenant(ctx, &authv1.GetTenantRequest{TenantId: tenantID})
		if err != nil {
			return "", err
		}
		return resp.GetTenant().GetDefaultCurrency(), nil
	}
}

// Module describes the inventory service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(ctx context.Context, d service.Deps) (service.Service, error) {
		ttl, err := d.Config.Duration("ALMONER_INVENTORY_CURRENCY_CACHE_TTL", DefaultCurrencyCacheTTL)
		if err != nil {
			return nil, err
		}
		// Fail at start-up, not at the first create, when the deployment
		// does not say where the auth service is.
		conn, err := d.Dial("auth")
		if err != nil {
			return nil, err
		}
		cfg := Config{TenantCurrency: AuthCurrencyLookup(authv1.NewTenantAdminServiceClient(conn)), CurrencyCacheTTL: ttl}
		return New(d.DB, cfg, d.Logger), nil
	},
}
