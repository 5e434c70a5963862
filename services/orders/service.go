// Package orders is the orders service. For now it is a stub that serves
// only GivingService.GetContactGivingSummary, so that the contact dashboard
// has its real caller and wire shape before orders exist: it answers with
// empty lists (no currencies, no orders, no schedules), never with invented
// figures. The orders issue replaces it with the real service.
package orders

import (
	"context"

	"google.golang.org/grpc"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/service"
)

// Name is the service's name in --target.
const Name = "orders"

// Migrations are the schemas the service needs: none while it is a stub.
func Migrations() []db.Migrations { return nil }

// Service is the orders service (stub).
type Service struct{}

// New returns the stub.
func New() *Service { return &Service{} }

// Register adds the service's gRPC servers to r.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	ordersv1.RegisterGivingServiceServer(r, &givingServer{})
}

// Start does nothing: the stub has no background work.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing.
func (s *Service) Stop(context.Context) error { return nil }

// Module describes the orders service to the binaries that host it.
var Module = service.Module{
	Name:       Name,
	Migrations: Migrations,
	New: func(context.Context, service.Deps) (service.Service, error) {
		return New(), nil
	},
}
