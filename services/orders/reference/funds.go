package reference

import (
	"context"
	"errors"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/wire"
)

// FundServer serves /api/tenants/{tid}/funds.
type FundServer struct {
	ordersv1.UnimplementedFundServiceServer
	store *store.Store
}

// ListFunds returns every fund. Whoever records or reads gifts needs the
// fund list, so any of those scopes will do.
func (a *FundServer) ListFunds(ctx context.Context, req *ordersv1.ListFundsRequest) (*ordersv1.ListFundsResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.FundsView, scopes.FundsManage, scopes.DonationsView, scopes.OrdersView, scopes.OrdersCreate)
	if err != nil {
		return nil, err
	}
	list, err := a.store.ListFunds(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	out := &ordersv1.ListFundsResponse{Funds: make([]*ordersv1.Fund, 0, len(list))}
	for _, f := range list {
		out.Funds = append(out.Funds, wire.ToFund(f))
	}
	return out, nil
}

type fundInput struct {
	name, description string
	deductible        *bool
	fee               *typev1.Decimal
	active            *bool
}

func validateFund(in fundInput) (store.Fund, error) {
	var v apperr.Violations
	f := store.Fund{Name: wire.Text(&v, "Name", in.name, wire.MaxText, true), Description: wire.Text(&v, "Description", in.description, wire.MaxNotes, false),
		IsTaxDeductible: in.deductible == nil || *in.deductible, IsActive: in.active == nil || *in.active}
	if in.fee != nil && in.fee.GetValue() != "" {
		bp, err := money.ParseMinor(in.fee.GetValue(), "USD") // two decimals of a percent
		if err != nil || bp < 0 || bp > 10000 {
			v.Add("ProcessingFeePercent", "'ProcessingFeePercent' must be a number from 0 to 100 with at most two decimals.")
		}
		f.ProcessingFeeBP = bp
	}
	return f, v.Err()
}

func duplicateFund(name string) error {
	return apperr.FieldRule(wire.CodeDuplicateFundName, "Name", "A fund named '"+wire.Truncate(name, wire.MaxText)+"' already exists.")
}

// CreateFund creates a fund.
func (a *FundServer) CreateFund(ctx context.Context, req *ordersv1.CreateFundRequest) (*ordersv1.CreateFundResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.FundsManage)
	if err != nil {
		return nil, err
	}
	f, err := validateFund(fundInput{req.GetName(), req.GetDescription(), req.IsTaxDeductible, req.GetProcessingFeePercent(), req.IsActive})
	if err != nil {
		return nil, err
	}
	f.TenantID = p.Tenant()
	saved, err := a.store.CreateFund(ctx, f, p.Actor())
	if errors.Is(err, store.ErrDuplicateName) {
		return nil, duplicateFund(f.Name)
	}
	if err != nil {
		return nil, err
	}
	return &ordersv1.CreateFundResponse{Fund: wire.ToFund(saved)}, nil
}

// UpdateFund replaces a fund's editable fields. Orders keep the
// deductibility they were recorded with.
func (a *FundServer) UpdateFund(ctx context.Context, req *ordersv1.UpdateFundRequest) (*ordersv1.UpdateFundResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.FundsManage)
	if err != nil {
		return nil, err
	}
	id, ok := wire.ParseID(req.GetFundId())
	if !ok {
		return nil, wire.ErrFundNotFound
	}
	f, err := validateFund(fundInput{req.GetName(), req.GetDescription(), req.IsTaxDeductible, req.GetProcessingFeePercent(), req.IsActive})
	if err != nil {
		return nil, err
	}
	f.TenantID, f.ID = p.Tenant(), id
	saved, err := a.store.UpdateFund(ctx, f, p.Actor())
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, wire.ErrFundNotFound
	case errors.Is(err, store.ErrDuplicateName):
		return nil, duplicateFund(f.Name)
	case err != nil:
		return nil, err
	}
	return &ordersv1.UpdateFundResponse{Fund: wire.ToFund(saved)}, nil
}

// NewFundServer returns the funds' gRPC server on st.
func NewFundServer(st *store.Store) *FundServer { return &FundServer{store: st} }
