package operators

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/services/auth/store"
)

// Operations serves OperationsService: the platform's operations log, to
// operators of either role.
type Operations struct {
	authv1.UnimplementedOperationsServiceServer
	st *store.Store
}

// NewOperations returns the server.
func NewOperations(st *store.Store) *Operations { return &Operations{st: st} }

// ListOperations lists the platform's operations newest first.
func (o *Operations) ListOperations(ctx context.Context, req *authv1.ListOperationsRequest) (*authv1.ListOperationsResponse, error) {
	if _, err := authctx.RequireOperator(ctx, false); err != nil {
		return nil, err
	}
	q, err := operationQuery(req)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.Operation, int64, error) {
		q.Limit, q.Offset = limit, offset
		return o.st.ListOperations(ctx, q)
	}, operationToWire)
	if err != nil {
		return nil, err
	}
	return &authv1.ListOperationsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// operationQuery validates the filters.
func operationQuery(req *authv1.ListOperationsRequest) (store.OperationQuery, error) {
	var v apperr.Violations
	q := store.OperationQuery{Kind: req.GetKind()}
	if q.Kind != "" && !slices.Contains(store.OperationKinds, q.Kind) {
		v.Add("Kind", "'Kind' must be one of %s.", strings.Join(store.OperationKinds, ", "))
	}
	if req.GetTenantId() != "" {
		id, err := uuid.Parse(req.GetTenantId())
		if err != nil {
			v.Add("TenantId", "'TenantId' must be a tenant id.")
		}
		q.TenantID = id
	}
	return q, v.Err()
}

func operationToWire(o store.Operation) *authv1.Operation {
	out := &authv1.Operation{Id: o.ID, TenantId: o.TenantID.String(), Kind: o.Kind, Status: o.Status, StartedAt: timestamppb.New(o.StartedAt),
		Detail: o.Detail}
	if o.FinishedAt != nil {
		out.FinishedAt = timestamppb.New(*o.FinishedAt)
	}
	return out
}
