// Package fulfillment is the inventory service's fulfillment room: the
// shipments REST resource (list, read, transitions, split, address, bulk
// ship) and the internal creation of an order's shipment that the orders
// service's outbox delivers (docs/fulfillment.md). Its SQL is
// store/shipstore; its state rules are the pure package state.
package fulfillment

import (
	"context"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/inventory/fulfillment/state"
	"github.com/almoner/almoner/services/inventory/store/shipstore"
)

// Server serves ShipmentService, ShipmentCreationService and
// ShipmentContactMoveService.
type Server struct {
	inventoryv1.UnimplementedShipmentServiceServer
	store *shipstore.Store
}

// New returns the room on its store.
func New(st *shipstore.Store) *Server { return &Server{store: st} }

// Register adds the room's gRPC servers to r.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	inventoryv1.RegisterShipmentServiceServer(r, s)
	inventoryv1.RegisterShipmentCreationServiceServer(r, &creation{store: s.store})
	inventoryv1.RegisterShipmentContactMoveServiceServer(r, s.ContactMover())
}

// ContactMover is the room's internal ShipmentContactMoveService, for the
// contacts service's merge saga.
func (s *Server) ContactMover() inventoryv1.ShipmentContactMoveServiceServer {
	return &contactMove{store: s.store}
}

// ListShipments returns one page of the tenant's shipments.
func (s *Server) ListShipments(ctx context.Context, req *inventoryv1.ListShipmentsRequest) (*inventoryv1.ListShipmentsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.ShipmentsView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	f, err := listFilter(req)
	if err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]shipstore.Shipment, int64, error) {
		return s.store.List(ctx, p.Tenant(), f, limit, offset)
	}, toShipment)
	if err != nil {
		return nil, err
	}
	return &inventoryv1.ListShipmentsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// GetShipment reads one shipment; an id that does not parse is not found.
func (s *Server) GetShipment(ctx context.Context, req *inventoryv1.GetShipmentRequest) (*inventoryv1.GetShipmentResponse, error) {
	p, id, err := shipmentOf(ctx, req.GetTenantId(), req.GetShipmentId(), scopes.ShipmentsView)
	if err != nil {
		return nil, err
	}
	sh, err := s.store.Get(ctx, p.Tenant(), id)
	if err != nil {
		return nil, mapError(err)
	}
	return &inventoryv1.GetShipmentResponse{Shipment: toShipment(sh)}, nil
}

// PackShipment marks a pending shipment packed.
func (s *Server) PackShipment(ctx context.Context, req *inventoryv1.PackShipmentRequest) (*inventoryv1.PackShipmentResponse, error) {
	sh, err := s.move(ctx, req.GetTenantId(), req.GetShipmentId(), func() (shipstore.Move, error) {
		return shipstore.Move{Action: state.Pack}, nil
	})
	return &inventoryv1.PackShipmentResponse{Shipment: sh}, err
}

// ShipShipment records the carrier and tracking of a shipment that left.
func (s *Server) ShipShipment(ctx context.Context, req *inventoryv1.ShipShipmentRequest) (*inventoryv1.ShipShipmentResponse, error) {
	sh, err := s.move(ctx, req.GetTenantId(), req.GetShipmentId(), func() (shipstore.Move, error) {
		return shipMove("", req.GetCarrier(), req.GetTrackingNumber(), req.GetTrackingUrl())
	})
	return &inventoryv1.ShipShipmentResponse{Shipment: sh}, err
}

// DeliverShipment records that a shipped shipment arrived.
func (s *Server) DeliverShipment(ctx context.Context, req *inventoryv1.DeliverShipmentRequest) (*inventoryv1.DeliverShipmentResponse, error) {
	sh, err := s.move(ctx, req.GetTenantId(), req.GetShipmentId(), func() (shipstore.Move, error) {
		return shipstore.Move{Action: state.Deliver}, nil
	})
	return &inventoryv1.DeliverShipmentResponse{Shipment: sh}, err
}

// CancelShipment cancels a pending or packed shipment, its units back.
func (s *Server) CancelShipment(ctx context.Context, req *inventoryv1.CancelShipmentRequest) (*inventoryv1.CancelShipmentResponse, error) {
	sh, err := s.move(ctx, req.GetTenantId(), req.GetShipmentId(), func() (shipstore.Move, error) {
		reason, err := requiredReason(req.GetReason())
		return shipstore.Move{Action: state.Cancel, Reason: reason}, err
	})
	return &inventoryv1.CancelShipmentResponse{Shipment: sh}, err
}

// ReturnShipment records a shipment that came back, restocked or not.
func (s *Server) ReturnShipment(ctx context.Context, req *inventoryv1.ReturnShipmentRequest) (*inventoryv1.ReturnShipmentResponse, error) {
	sh, err := s.move(ctx, req.GetTenantId(), req.GetShipmentId(), func() (shipstore.Move, error) {
		reason, err := requiredReason(req.GetReason())
		return shipstore.Move{Action: state.Return, Reason: reason, Restock: req.GetRestock()}, err
	})
	return &inventoryv1.ReturnShipmentResponse{Shipment: sh}, err
}

// move checks the scope and the path, then the body (read reports it),
// then applies the move.
func (s *Server) move(ctx context.Context, tenant, shipment string, read func() (shipstore.Move, error)) (*inventoryv1.Shipment, error) {
	p, id, err := shipmentOf(ctx, tenant, shipment, scopes.ShipmentsManage)
	if err != nil {
		return nil, err
	}
	m, err := read()
	if err != nil {
		return nil, err
	}
	sh, err := s.store.Transition(ctx, p.Tenant(), id, m, p.Actor())
	if err != nil {
		return nil, mapError(err)
	}
	return toShipment(sh), nil
}

// CreateShipmentSplit moves quantities of a pending shipment to a new one.
func (s *Server) CreateShipmentSplit(ctx context.Context, req *inventoryv1.CreateShipmentSplitRequest) (*inventoryv1.CreateShipmentSplitResponse, error) {
	p, id, err := shipmentOf(ctx, req.GetTenantId(), req.GetShipmentId(), scopes.ShipmentsManage)
	if err != nil {
		return nil, err
	}
	parts, err := splitParts(req.GetLines())
	if err != nil {
		return nil, err
	}
	sh, err := s.store.Split(ctx, p.Tenant(), id, parts, p.Actor())
	if err != nil {
		return nil, mapError(err)
	}
	return &inventoryv1.CreateShipmentSplitResponse{Shipment: toShipment(sh)}, nil
}

// CorrectShipmentAddress replaces the address of a shipment not yet gone.
func (s *Server) CorrectShipmentAddress(ctx context.Context, req *inventoryv1.CorrectShipmentAddressRequest) (*inventoryv1.CorrectShipmentAddressResponse, error) {
	p, id, err := shipmentOf(ctx, req.GetTenantId(), req.GetShipmentId(), scopes.ShipmentsManage)
	if err != nil {
		return nil, err
	}
	a, err := validAddress("ShippingAddress", req.GetShippingAddress())
	if err != nil {
		return nil, err
	}
	sh, err := s.store.CorrectAddress(ctx, p.Tenant(), id, a, p.Actor())
	if err != nil {
		return nil, mapError(err)
	}
	return &inventoryv1.CorrectShipmentAddressResponse{Shipment: toShipment(sh)}, nil
}

// shipmentOf checks scope for the tenant and parses the shipment id; one
// that does not parse is not found.
func shipmentOf(ctx context.Context, tenant, shipment, scope string) (authctx.Principal, uuid.UUID, error) {
	p, err := authctx.Require(ctx, tenant, scope)
	if err != nil {
		return authctx.Principal{}, uuid.Nil, err
	}
	id, err := uuid.Parse(shipment)
	if err != nil {
		return authctx.Principal{}, uuid.Nil, errShipmentNotFound
	}
	return p, id, nil
}
