package reference

import (
	"context"
	"errors"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// BatchServer serves the operator tooling under /api/tenants/{tid}/batches.
type BatchServer struct {
	ordersv1.UnimplementedBatchServiceServer
	store *store.Store
}

// ListBatches returns a page of batches, newest first.
func (a *BatchServer) ListBatches(ctx context.Context, req *ordersv1.ListBatchesRequest) (*ordersv1.ListBatchesResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.BatchesView)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	state := ""
	if req.GetState() != "" {
		if state = normalize.OneOf([]string{store.BatchOpen, store.BatchClosed}, req.GetState()); state == "" {
			return nil, apperr.Invalid(apperr.Violation{Field: "State", Message: "'State' must be Open or Closed."})
		}
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.Batch, int64, error) {
		return a.store.ListBatches(ctx, p.Tenant(), state, limit, offset)
	}, wire.ToBatch)
	if err != nil {
		return nil, err
	}
	return &ordersv1.ListBatchesResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// GetBatch reads one batch with its figures.
func (a *BatchServer) GetBatch(ctx context.Context, req *ordersv1.GetBatchRequest) (*ordersv1.GetBatchResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.BatchesView)
	if err != nil {
		return nil, err
	}
	id, ok := wire.ParseID(req.GetBatchId())
	if !ok {
		return nil, wire.ErrBatchNotFound
	}
	b, err := a.store.GetBatch(ctx, p.Tenant(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, wire.ErrBatchNotFound
	}
	if err != nil {
		return nil, err
	}
	return &ordersv1.GetBatchResponse{Batch: wire.ToBatch(b)}, nil
}

// CreateBatch opens a named batch, with an optional description.
func (a *BatchServer) CreateBatch(ctx context.Context, req *ordersv1.CreateBatchRequest) (*ordersv1.CreateBatchResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.BatchesManage)
	if err != nil {
		return nil, err
	}
	var v apperr.Violations
	name := wire.Text(&v, "Name", req.GetName(), wire.MaxText, true)
	description := wire.Text(&v, "Description", req.GetDescription(), wire.MaxNotes, false)
	if err := v.Err(); err != nil {
		return nil, err
	}
	b, err := a.store.CreateBatch(ctx, p.Tenant(), name, description, p.Actor())
	if err != nil {
		return nil, err
	}
	return &ordersv1.CreateBatchResponse{Batch: wire.ToBatch(b)}, nil
}

// CloseBatch closes a batch; closing it again changes nothing.
func (a *BatchServer) CloseBatch(ctx context.Context, req *ordersv1.CloseBatchRequest) (*ordersv1.CloseBatchResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.BatchesManage)
	if err != nil {
		return nil, err
	}
	id, ok := wire.ParseID(req.GetBatchId())
	if !ok {
		return nil, wire.ErrBatchNotFound
	}
	b, err := a.store.CloseBatch(ctx, p.Tenant(), id, p.Actor())
	if errors.Is(err, db.ErrNotFound) {
		return nil, wire.ErrBatchNotFound
	}
	if err != nil {
		return nil, err
	}
	return &ordersv1.CloseBatchResponse{Batch: wire.ToBatch(b)}, nil
}

// NewBatchServer returns the batches' gRPC server on st.
func NewBatchServer(st *store.Store) *BatchServer { return &BatchServer{store: st} }
