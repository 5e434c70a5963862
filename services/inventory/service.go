// Package inventory is the inventory service: a tenant's items with their
// prices and stock (the public REST resource) and the stock reservations
// the orders service makes for item lines (an internal gRPC API).
package inventory

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
	"github.com/almoner/almoner/services/inventory/fulfillment"
	"github.com/almoner/almoner/services/inventory/migrations"
	"github.com/almoner/almoner/services/inventory/store"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// Name is the service's name in --target.
const Name = "inventory"

// Migrations are the schemas the service needs: the audit log and its own.
func Migrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), migrations.Set()}
}

// Service is the inventory service. It calls no other service: a tenant's
// default currency, for items given without one, comes with the principal.
type Service struct {
	store       *store.Store
	fulfillment *fulfillment.Server
	logger      *slog.Logger
}

// New returns the inventory service on pool. The fulfillment room's store
// hooks itself into the core store's release (shipstore.New).
func New(pool *pgxpool.Pool, logger *slog.Logger) *Service {
	core := store.New(pool)
	return &Service{store: core, fulfillment: fulfillment.New(shipstore.New(core)), logger: logger}
}

// Register adds the service's gRPC servers to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	inventoryv1.RegisterInventoryServiceServer(r, &itemServer{s: s})
	inventoryv1.RegisterStockReservationServiceServer(r, &reservationServer{s: s})
	s.fulfillment.Register(r)
}

// Start does nothing: the service has no background work.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing: the service has no background work.
func (s *Service) Stop(context.Context) error { return nil }

// Module describes the inventory service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(_ context.Context, d service.Deps) (service.Service, error) {
		return New(d.DB, d.Logger), nil
	},
}
