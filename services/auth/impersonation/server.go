package impersonation

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/paging"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/auth/store"
)

// Deps are what the servers need of the auth service.
type Deps struct {
	Store *store.Store
	Now   func() time.Time
	// AwaitCaches waits out the gateways' cache window after a change that
	// moved the validation epoch, so it acts on the next request.
	AwaitCaches func(context.Context)
}

// SupportAccess serves SupportAccessService: a tenant's side.
type SupportAccess struct {
	authv1.UnimplementedSupportAccessServiceServer
	d Deps
}

// Operators serves ImpersonationService: the operators' side.
type Operators struct {
	authv1.UnimplementedImpersonationServiceServer
	d Deps
}

// New returns both servers.
func New(d Deps) (*SupportAccess, *Operators) { return &SupportAccess{d: d}, &Operators{d: d} }

// PutSupportAccess grants support access.
func (s *SupportAccess) PutSupportAccess(ctx context.Context, req *authv1.PutSupportAccessRequest) (*authv1.PutSupportAccessResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.SupportAccessManage)
	if err != nil {
		return nil, err
	}
	until := time.Time{}
	if req.GetUntil() != nil {
		until = req.GetUntil().AsTime()
	}
	if err := checkGrant(until, s.d.Now()); err != nil {
		return nil, err
	}
	g, err := s.d.Store.PutSupportAccess(ctx, p.Tenant(), until, p.Actor())
	if err != nil {
		return nil, err
	}
	// A shorter grant ends cached validations sooner.
	s.d.AwaitCaches(ctx)
	return &authv1.PutSupportAccessResponse{SupportAccess: &authv1.SupportAccess{Until: timestamppb.New(g.Until), GrantedBy: g.GrantedBy,
		GrantedAt: timestamppb.New(g.GrantedAt)}}, nil
}

// DeleteSupportAccess withdraws it: every impersonation in force ends.
func (s *SupportAccess) DeleteSupportAccess(ctx context.Context, req *authv1.DeleteSupportAccessRequest) (*authv1.DeleteSupportAccessResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.SupportAccessManage)
	if err != nil {
		return nil, err
	}
	if err := s.d.Store.DeleteSupportAccess(ctx, p.Tenant(), p.Actor()); errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Support access")
	} else if err != nil {
		return nil, err
	}
	s.d.AwaitCaches(ctx)
	return &authv1.DeleteSupportAccessResponse{}, nil
}

// ListImpersonations lists the tenant's impersonations, newest first.
func (s *SupportAccess) ListImpersonations(ctx context.Context, req *authv1.ListImpersonationsRequest) (*authv1.ListImpersonationsResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.SupportAccessManage)
	if err != nil {
		return nil, err
	}
	pg, err := paging.Parse(req.Page, req.PageSize, "", paging.Standard)
	if err != nil {
		return nil, err
	}
	items, total, err := paging.Offset(pg, func(limit int32, offset int64) ([]store.Impersonation, int64, error) {
		return s.d.Store.ListImpersonations(ctx, p.Tenant(), limit, offset)
	}, toWire)
	if err != nil {
		return nil, err
	}
	return &authv1.ListImpersonationsResponse{Items: items, TotalCount: total, Page: pg.Number, PageSize: pg.Size}, nil
}

// CreateImpersonation starts an impersonation for the calling operator's
// session.
func (o *Operators) CreateImpersonation(ctx context.Context, req *authv1.CreateImpersonationRequest) (*authv1.CreateImpersonationResponse, error) {
	p, err := authctx.RequireOperator(ctx, false)
	if err != nil {
		return nil, err
	}
	minutes, err := checkStart(req.GetReason(), req.Minutes)
	if err != nil {
		return nil, err
	}
	tenant, terr := uuid.Parse(req.GetTenantId())
	user, uerr := uuid.Parse(req.GetUserId())
	operator, oerr := uuid.Parse(p.UserID)
	session, serr := uuid.Parse(p.SessionID)
	if terr != nil || uerr != nil || oerr != nil || serr != nil {
		return nil, apperr.NotFound("User")
	}
	now := o.d.Now()
	imp, err := o.d.Store.StartImpersonation(ctx, store.NewImpersonation{TenantID: tenant, UserID: user, OperatorID: operator, SessionID: session,
		Reason: req.GetReason(), ExpiresAt: now.Add(time.Duration(minutes) * time.Minute), Now: now})
	switch {
	case errors.Is(err, store.ErrNotGranted):
		return nil, apperr.ForbiddenCode(CodeNotGranted, "The tenant has not granted support access, or the grant has ended.")
	case errors.Is(err, store.ErrImpersonating):
		return nil, apperr.FieldRule(CodeInProgress, "", "You hold an impersonation already: end it first.")
	case errors.Is(err, db.ErrNotFound):
		return nil, apperr.NotFound("User")
	case err != nil:
		return nil, err
	}
	return &authv1.CreateImpersonationResponse{Impersonation: toWire(imp)}, nil
}

// GetCurrentImpersonation returns the operator's impersonation in force.
func (o *Operators) GetCurrentImpersonation(ctx context.Context, _ *authv1.GetCurrentImpersonationRequest) (*authv1.GetCurrentImpersonationResponse, error) {
	p, err := authctx.RequireOperator(ctx, false)
	if err != nil {
		return nil, err
	}
	operator, err := uuid.Parse(p.UserID)
	if err != nil {
		return nil, apperr.Unauthenticated()
	}
	imp, err := o.d.Store.OpenImpersonation(ctx, operator)
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Impersonation")
	}
	if err != nil {
		return nil, err
	}
	if !o.d.Now().Before(imp.ExpiresAt) {
		if err := o.d.Store.EndImpersonationFor(ctx, imp.ID, store.EndExpired); err != nil {
			return nil, err
		}
		return nil, apperr.NotFound("Impersonation")
	}
	return &authv1.GetCurrentImpersonationResponse{Impersonation: toWire(imp)}, nil
}

// DeleteImpersonation ends the operator's impersonation.
func (o *Operators) DeleteImpersonation(ctx context.Context, req *authv1.DeleteImpersonationRequest) (*authv1.DeleteImpersonationResponse, error) {
	p, err := authctx.RequireOperator(ctx, false)
	if err != nil {
		return nil, err
	}
	operator, oerr := uuid.Parse(p.UserID)
	id, ierr := uuid.Parse(req.GetId())
	if oerr != nil || ierr != nil {
		return nil, apperr.NotFound("Impersonation")
	}
	if err := o.d.Store.EndImpersonation(ctx, operator, id, store.EndDeleted); errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Impersonation")
	} else if err != nil {
		return nil, err
	}
	o.d.AwaitCaches(ctx)
	return &authv1.DeleteImpersonationResponse{}, nil
}

// Resolve returns the impersonation an operator's session works under on
// a tenant route, ending it (and answering 401) when it no longer holds:
// an operator's session reaches tenants only this way.
func Resolve(ctx context.Context, d Deps, session uuid.UUID) (store.ImpersonationAccess, error) {
	a, err := d.Store.ImpersonationBySession(ctx, session)
	if errors.Is(err, db.ErrNotFound) {
		return a, apperr.Unauthenticated()
	}
	if err != nil {
		return a, err
	}
	if reason := EndReason(a, d.Now()); reason != "" {
		if err := d.Store.EndImpersonationFor(ctx, a.Impersonation.ID, reason); err != nil {
			return a, err
		}
		return a, apperr.Unauthenticated()
	}
	return a, nil
}

func toWire(i store.Impersonation) *authv1.Impersonation {
	out := &authv1.Impersonation{Id: i.ID.String(), TenantId: i.TenantID.String(), UserId: i.UserID.String(), OperatorId: i.OperatorID.String(),
		OperatorEmail: i.OperatorEmail, Reason: i.Reason, StartedAt: timestamppb.New(i.StartedAt), ExpiresAt: timestamppb.New(i.ExpiresAt),
		EndReason: i.EndReason}
	if i.EndedAt != nil {
		out.EndedAt = timestamppb.New(*i.EndedAt)
	}
	return out
}
